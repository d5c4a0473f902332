"""End to end: the activity-stream pipeline on PySpark against a live broker (wirekafka, and real
Kafka as the reference), with a known answer.

The streaming job runs as a subprocess, as a user would run it: first over half the input and
stopped (availableNow), then restarted from its checkpoint over the second half in continuous
mode and SIGKILLed mid-run (the whole driver: Python and its JVM), then restarted again. The
compacted counts topic's latest values must equal the exact per-window counts (a window counted
twice would show), and the Parquet warehouse must hold every event exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from examples.activity_stream import generator, job, warehouse
from examples.activity_stream.top_pages import latest_counts, top_pages
from spark_support import WIREKAFKA, real_kafka, targets

# Three Spark driver runs (a JVM each): about 200-300 s on a quiet 2-core machine, more beside the
# parallel half of the test command; each run is bounded by itself (_run_job).
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]
REPO = Path(__file__).resolve().parent.parent
TOTAL = 600  # 3 minutes of event time, 300 ms apart


@pytest.fixture(params=targets())
def kafka(request: pytest.FixtureRequest):
    if request.param == WIREKAFKA:
        yield request.getfixturevalue("broker")
    else:
        with real_kafka() as cluster:
            yield cluster


def _start_job(kafka, source: str, counts: str, state: Path, log: Path, *extra: str) -> subprocess.Popen:
    """The job in its own session (process group), so a SIGKILL reaches the JVM too."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "examples.activity_stream.job", "--bootstrap", kafka.bootstrap,
                                 "--source", source, "--counts-topic", counts, "--state", str(state), *extra],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _run_job(kafka, source: str, counts: str, state: Path, log: Path, *extra: str) -> None:
    proc = _start_job(kafka, source, counts, state, log, "--available-now", *extra)
    try:
        code = proc.wait(timeout=300)
    finally:
        _kill_group(proc)
    assert code == 0, log.read_text(errors="replace")[-4000:]


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL every process of the job's group and wait until none is left (bounded)."""
    for _ in range(100):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            break
        if proc.poll() is None:
            proc.wait()
        time.sleep(0.1)
    else:
        raise AssertionError(f"job process group {proc.pid} survived SIGKILL")


def _end_offsets(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends", "log_level": 0})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts)
    finally:
        consumer.close()


def _committed_input(checkpoint: Path) -> int:
    """How many source records the query's last committed micro-batch had reached: the source
    offsets (third line of offsets/<batch>) of the newest batch in commits/."""
    last = max(int(f.name) for f in (checkpoint / "commits").iterdir() if f.name.isdigit())
    offsets = json.loads((checkpoint / "offsets" / str(last)).read_text().splitlines()[2])
    return sum(sum(per_partition.values()) for per_partition in offsets.values())


def _expected(start: int, count: int) -> tuple[dict[str, int], dict[str, int], list[tuple[str, int]]]:
    """Per "page|window" counts, per-page totals and (user, ts) rows for the first `count` events."""
    views = list(generator.events(count, start))
    per_window: Counter[str] = Counter()
    for v in views:
        minute = datetime.fromtimestamp(v.ts // 60_000 * 60, tz=timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
        per_window[f"{v.page}|{minute}"] += 1
    return dict(per_window), dict(Counter(v.page for v in views)), sorted((v.user, v.ts) for v in views)


def test_pipeline_exact_counts_across_restart_and_driver_crash(kafka, tmp_path):
    source, counts = f"page-views-{uuid.uuid4().hex[:6]}", f"page-view-counts-{uuid.uuid4().hex[:6]}"
    state, log = tmp_path / "state", tmp_path / "job.log"
    start = generator.default_start()
    generator.ensure_topic(kafka.bootstrap, source)

    # 1. First half, processed and stopped: the counts so far are exact.
    generator.produce(kafka.bootstrap, source, generator.events(TOTAL // 2, start))
    _run_job(kafka, source, counts, state, log, "--max-offsets-per-trigger", "100")
    half_windows, _, _ = _expected(start, TOTAL // 2)
    assert {k: v["count"] for k, v in latest_counts(kafka.bootstrap, counts).items()} == half_windows

    # 2. Second half; the job restarts from its checkpoint in continuous mode, 40 records per
    # micro-batch, and the driver is SIGKILLed as soon as a batch of the new input reached the topic.
    generator.produce(kafka.bootstrap, source, generator.events(TOTAL // 2, start, offset=TOTAL // 2))
    written = _end_offsets(kafka.bootstrap, counts)
    crashing = _start_job(kafka, source, counts, state, log, "--max-offsets-per-trigger", "40", "--seconds", "300")
    try:
        for _ in range(1800):  # bounded: 180 s
            if _end_offsets(kafka.bootstrap, counts) > written or crashing.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        _kill_group(crashing)
    assert crashing.returncode == -signal.SIGKILL, log.read_text(errors="replace")[-4000:]
    # The crash left input behind: the restart below has real work to redo and to finish.
    assert TOTAL // 2 <= _committed_input(state / "checkpoints" / "counts") < TOTAL

    # 3. Restarted from the checkpoint once more, to the end of the input.
    _run_job(kafka, source, counts, state, log)

    per_window, per_page, rows = _expected(start, TOTAL)
    latest = latest_counts(kafka.bootstrap, counts)
    assert {k: v["count"] for k, v in latest.items()} == per_window
    assert dict(top_pages(latest, len(per_page))) == per_page
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
    resource = ConfigResource(ConfigResource.Type.TOPIC, counts)
    assert admin.describe_configs([resource])[resource].result(30)["cleanup.policy"].value == "compact"

    table = warehouse.read_table(state / job.WAREHOUSE_TABLE)
    assert sorted(zip(table.column("user").to_pylist(), table.column("ts").to_pylist())) == rows
    assert {str(d) for d in table.column("dt").to_pylist()} == {
        datetime.fromtimestamp(ts / 1000, tz=timezone.utc).strftime("%Y-%m-%d") for _, ts in rows}
