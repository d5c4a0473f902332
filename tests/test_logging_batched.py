"""The broker's log handler: lines formatted where logged, written off the caller's thread, as many
as are waiting in one write, in order, and all of them by the time logging shuts down."""

from __future__ import annotations

import io
import logging
import os
import threading

from wirekafka.server.logging_setup import BatchedStreamHandler


class _GatedStream(io.StringIO):
    """A stream whose first write waits for `release`, counting its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        self.entered.set()
        self.release.wait(10)
        return super().write(text)


def _logger(handler: logging.Handler, name: str) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def test_lines_waiting_while_a_write_runs_go_out_in_one_write_in_order() -> None:
    stream = _GatedStream()
    handler = BatchedStreamHandler(stream)
    log = _logger(handler, "test.batched.order")
    log.info("line %d", 0)
    assert stream.entered.wait(10)  # the writer thread is inside its first write
    for i in range(1, 200):
        log.info("line %d", i)
    stream.release.set()
    handler.flush()
    assert stream.getvalue().splitlines() == [f"line {i}" for i in range(200)]
    assert stream.writes == 2


def test_a_line_shows_its_arguments_as_they_were_when_logged() -> None:
    stream = _GatedStream()
    handler = BatchedStreamHandler(stream)
    log = _logger(handler, "test.batched.values")
    isr = [1, 2, 3]
    log.info("first")
    assert stream.entered.wait(10)
    log.info("ISR %s", isr)
    isr.append(4)
    stream.release.set()
    handler.flush()
    assert stream.getvalue().splitlines() == ["first", "ISR [1, 2, 3]"]


def test_every_line_is_out_after_flush_whatever_the_writer_thread_did() -> None:
    stream = io.StringIO()
    handler = BatchedStreamHandler(stream)
    log = _logger(handler, "test.batched.flush")
    threads = [threading.Thread(target=lambda n=n: [log.info("t%d %d", n, i) for i in range(500)]) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handler.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2000
    for n in range(4):
        assert [line for line in lines if line.startswith(f"t{n} ")] == [f"t{n} {i}" for i in range(500)]


def test_a_forked_child_writes_its_lines_at_once() -> None:
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    handler = BatchedStreamHandler(stream)
    log = _logger(handler, "test.batched.fork")
    pid = os.fork()
    if pid == 0:  # the child has no writer thread and ends without flushing
        log.info("from the child")
        os._exit(0)
    os.waitpid(pid, 0)
    stream.close()
    with os.fdopen(read_end) as got:
        assert got.read() == "from the child\n"


class _BrokenStream(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")


def test_a_write_that_fails_is_reported_on_stderr_not_raised(monkeypatch) -> None:
    """As logging.Handler.handleError reports a failed emit: the traceback on stderr, nothing raised."""
    errors = io.StringIO()
    monkeypatch.setattr("sys.stderr", errors)
    stream = _BrokenStream()
    handler = BatchedStreamHandler(stream)
    log = _logger(handler, "test.batched.broken")
    log.info("lost")
    handler.flush()
    assert "--- Logging error ---" in errors.getvalue() and "Input/output error" in errors.getvalue()
