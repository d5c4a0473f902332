"""scripts/jvm_process's start-up retries: a process that exits during start-up after logging one
of its restartable_exit_errors (Kafka 3.9's stale registration, or its ZooKeeper session lost
mid start-up) is started again, as a supervisor would, until it serves or restart_wait_s passes;
any other exit fails at once with the log's tail. The 'JVM' here is a small Python child."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scripts import jvm_process

# exits with the restartable line while the counter file says fewer than `fail` starts happened,
# then serves (writes `ready` and sleeps)
_CHILD = """
import pathlib, sys, time
wd, fail, line = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
counter = wd / "starts"
starts = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(starts + 1))
if starts < fail:
    print(line, flush=True)
    sys.exit(1)
(wd / "ready").write_text("yes")
time.sleep(60)
"""


class _Child(jvm_process.JvmProcess):
    label = "Child"
    log_name = "child.log"
    restartable_exit_errors = ("Session expired",)
    poll_interval = 0.02

    def __init__(self, workdir: Path, fail: int, line: str, wait_s: float) -> None:
        super().__init__(workdir, keep_workdir=True, die_with_parent=False)
        self.fail, self.line, self.restart_wait_s = fail, line, wait_s

    def start(self) -> "_Child":
        self._prepare_workdir()
        self._start_attempts(1, self._start_once)
        return self

    def _start_once(self) -> None:
        self._launch([sys.executable, "-c", _CHILD, str(self._wd), str(self.fail), self.line])
        self._wait_ready(10)

    def _ready(self) -> bool:
        return (self._wd / "ready").exists()

    def starts(self) -> int:
        return int((self._wd / "starts").read_text())


def test_an_exit_for_a_passing_reason_is_started_again_until_it_serves(tmp_path: Path) -> None:
    child = _Child(tmp_path, 2, "KeeperErrorCode = Session expired for /feature", 30)
    try:
        child.start()
        assert child.alive() and child.starts() == 3
    finally:
        child.stop()


def test_any_other_exit_fails_at_once_with_the_log(tmp_path: Path) -> None:
    child = _Child(tmp_path, 2, "Fatal: no such log dir", 30)
    with pytest.raises(RuntimeError, match="(?s)exited with 1 during start-up.*no such log dir"):
        child.start()
    assert child.starts() == 1


def test_restarts_stop_after_the_wait_with_the_reason(tmp_path: Path) -> None:
    child = _Child(tmp_path, 1_000, "Session expired", 0.5)
    with pytest.raises(RuntimeError, match=r"still exited during start-up after 0.5s of restarts \(Session expired\)"):
        child.start()
    assert child.starts() >= 1
