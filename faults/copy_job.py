"""The nemesis suite's exactly-once workload: a consume-transform-produce job that copies the
acking producer's topic into another, one transaction per poll with its input offsets sent to the
transaction (TxnOffsetCommit), as Kafka Streams and Kafka's TransactionalMessageCopier do. Its
group's coordinator and its transaction's coordinator are whichever brokers lead the two internal
topics' partitions, so the faults hit them as they hit data leaders.

The job is Java (faults/java/CopyJob.java, run with Java's source-file launcher on the Kafka 4.3.1
client jars), not librdkafka: librdkafka's send_offsets_to_transaction() can block forever when the
group coordinator dies during the call, whatever its timeout (librdkafka issues #5456 and #5511;
seen here on Kafka 3.9.1 and wirekafka alike), while Java bounds every call by max.block.ms.
After the faults, the job runs on until its committed offsets reach the input's end; the checker
then reads the copy with read_committed (workload.read_committed)."""

from __future__ import annotations

import json
import logging
import select
import subprocess
from dataclasses import dataclass
from pathlib import Path

from scripts import realkafka

log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parent / "java" / "CopyJob.java"
# one long-lived JVM: the client compiler alone and the serial collector keep its CPU low
JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")


@dataclass(frozen=True)
class CopyRun:
    """What the job reported: records copied in committed transactions, transactions committed,
    aborted after an error, aborted on purpose, and producers replaced (fenced or failed)."""

    copied: int
    commits: int
    aborts: int
    random_aborts: int
    restarts: int


class CopyJob:
    def __init__(self, bootstrap: str, source: str, sink: str, log_path: Path) -> None:
        self.sink = sink
        self.args = [bootstrap, source, sink, f"{source}-copier", f"{source}-copy-group"]
        self.log_path = log_path
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 120) -> "CopyJob":
        """Start the job and wait until it copies (compiling and starting a JVM takes a while on a
        busy machine: the faults must not be over before the job even runs)."""
        with open(self.log_path, "ab") as stderr:
            self.proc = subprocess.Popen(realkafka.tool_command(str(SOURCE), self.args, jvm_opts=JVM_OPTS),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready or self.proc.stdout.readline().strip() != "ready":
            self.stop()
            raise RuntimeError(f"the copy job did not start in {timeout:g}s:\n{self._log_tail()}")
        return self

    def finish(self, ends: dict[int, int], timeout: float) -> CopyRun:
        """Let the job run until its committed offsets reach `ends` (input partition -> offset),
        then read its counts; TimeoutError, or RuntimeError with its log, if it does not get there."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write("finish " + " ".join(str(ends[p]) for p in sorted(ends)) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # the job ended during the faults: its log says why
            self.proc.wait()
            raise RuntimeError(f"the copy job exited with {self.proc.returncode} before the faults ended:\n"
                               f"{self._log_tail()}") from None
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise TimeoutError(f"the copy job did not reach {ends} in {timeout:g}s:\n{self._log_tail()}") from None
        if self.proc.returncode != 0 or not out.strip():
            raise RuntimeError(f"the copy job exited with {self.proc.returncode}:\n{self._log_tail()}")
        counts = json.loads(out.strip().splitlines()[-1])
        log.info("copy job: %s", counts)
        return CopyRun(**counts)

    def stop(self) -> None:
        """Kill the job if it still runs (a run that failed before finish)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def _log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
