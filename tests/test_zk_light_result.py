"""LightResult (zk/light_result.py), kazoo's async result made light: kazoo's semantics (store
once, wake every waiter, the timeout error, callbacks on the completion queue or at once when the
handler is stopped) with no object of its own for the cyclic collector to walk."""

from __future__ import annotations

import gc
import queue
import threading
from types import SimpleNamespace

import pytest
from kazoo.handlers.threading import KazooTimeoutError

from wirekafka.broker.metadata.zk.light_result import LightResult
from wirekafka.broker.metadata.zk.poll_handler import PollHandler


def _handler(running: bool = True) -> SimpleNamespace:
    return SimpleNamespace(running=running, completion_queue=queue.Queue())


def test_a_value_is_stored_once_and_got() -> None:
    result = LightResult(_handler())
    assert not result.ready() and result.exception is None
    result.set(("data", 1))
    assert result.ready() and result.successful() and result.exception is None
    assert result.get() == ("data", 1) and result.get_nowait() == ("data", 1)
    assert result.wait(0) is True


def test_an_error_is_raised_by_every_get() -> None:
    result = LightResult(_handler())
    error = ValueError("no node")
    result.set_exception(error)
    assert result.ready() and not result.successful() and result.exception is error
    for _ in range(2):
        with pytest.raises(ValueError):
            result.get()


def test_an_unset_result_times_out_with_kazoos_error() -> None:
    result = LightResult(_handler())
    with pytest.raises(KazooTimeoutError):
        result.get_nowait()
    with pytest.raises(KazooTimeoutError):
        result.get(timeout=0.01)
    assert result.wait(0.01) is False


def test_every_waiting_thread_is_woken_by_the_answer() -> None:
    result = LightResult(_handler())
    got: list[object] = []
    waiting = threading.Barrier(4)

    def wait() -> None:
        waiting.wait()
        got.append(result.get(timeout=30))

    threads = [threading.Thread(target=wait) for _ in range(3)]
    for t in threads:
        t.start()
    waiting.wait()
    result.set("answer")
    for t in threads:
        t.join(30)
    assert got == ["answer"] * 3


def test_callbacks_go_to_the_completion_queue_while_the_handler_runs() -> None:
    handler = _handler(running=True)
    result = LightResult(handler)
    seen: list[object] = []
    result.rawlink(seen.append)
    result.rawlink(seen.append)  # linked once
    dropped = LightResult(handler)
    dropped.rawlink(seen.append)
    dropped.unlink(seen.append)
    dropped.set("never seen")
    result.set("v")
    assert seen == [] and handler.completion_queue.qsize() == 1
    handler.completion_queue.get()()
    assert seen == [result]


def test_a_callback_linked_after_the_answer_is_dispatched_at_once() -> None:
    handler = _handler(running=True)
    result = LightResult(handler)
    result.set("v")
    result.rawlink(lambda r: None)
    assert handler.completion_queue.qsize() == 1


def test_a_stopped_handler_calls_back_at_once_and_the_callback_may_get() -> None:
    result = LightResult(_handler(running=False))
    seen: list[object] = []
    result.rawlink(lambda r: seen.append(r.get()))
    result.set("v")
    assert seen == ["v"]


def test_a_result_holds_nothing_the_collector_tracks_but_its_handler() -> None:
    """The point of the class: kazoo's result brought about ten more tracked objects per read."""
    handler = _handler()
    result = LightResult(handler)

    def tracked() -> list[object]:
        return [o for o in gc.get_referents(result) if gc.is_tracked(o) and o is not LightResult]

    assert tracked() == [handler]
    result.wait(0.001)  # a thread that waits makes one lock
    assert len(tracked()) == 2
    result.set((b"data", 1))
    assert result.get() == (b"data", 1)
    assert PollHandler().async_result().__class__ is LightResult
