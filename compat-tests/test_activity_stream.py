"""End to end: the activity-stream pipeline on PySpark against a live wirekafka, with a known
answer. The streaming job is restarted from its checkpoint in the middle of the input, and once
killed with SIGKILL mid-run; the compacted counts topic's latest values must equal the exact
counts (no window counted twice), and the Parquet warehouse must hold every event once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from examples.activity_stream import generator
from examples.activity_stream.top_pages import latest_counts, top_pages

pytestmark = [pytest.mark.spark, pytest.mark.slow]
REPO = Path(__file__).resolve().parent.parent
TOTAL = 600


def _job(broker, source: str, counts: str, state: Path, *extra: str, wait: bool = True) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "examples.activity_stream.job", "--bootstrap", broker.bootstrap,
                             "--source", source, "--counts-topic", counts, "--state", str(state), *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if wait:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out[-4000:]
    return proc


def _expected(start: int) -> tuple[dict[str, int], Counter]:
    per_window: dict[str, int] = Counter()
    for v in generator.events(TOTAL, start):
        minute = datetime.fromtimestamp(v.ts // 60_000 * 60, tz=timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
        per_window[f"{v.page}|{minute}"] += 1
    return dict(per_window), Counter(v.page for v in generator.events(TOTAL, start))


def test_pipeline_exact_counts_across_restart_and_driver_crash(broker, tmp_path):
    source, counts = f"page-views-{uuid.uuid4().hex[:6]}", f"page-view-counts-{uuid.uuid4().hex[:6]}"
    state = tmp_path / "state"
    start = generator.default_start()
    generator.ensure_topic(broker.bootstrap, source)
    generator.produce(broker.bootstrap, source, generator.events(TOTAL // 2, start))
    _job(broker, source, counts, state, "--available-now")             # first half
    generator.produce(broker.bootstrap, source, generator.events(TOTAL // 2, start, offset=TOTAL // 2))
    before = sum(1 for _ in latest_counts(broker.bootstrap, counts))
    crashing = _job(broker, source, counts, state, "--seconds", "120", wait=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:                                  # until it has written a batch
        if len(latest_counts(broker.bootstrap, counts, timeout=3)) > before:
            break
        time.sleep(1)
    crashing.kill()                                                     # SIGKILL the driver mid-run
    crashing.wait()
    _job(broker, source, counts, state, "--available-now")             # restart from the checkpoint

    per_window, per_page = _expected(start)
    latest = latest_counts(broker.bootstrap, counts)
    assert {k: v["count"] for k, v in latest.items()} == per_window
    assert dict(top_pages(latest, 10)) == dict(per_page)

    import pyarrow.dataset as ds

    table = ds.dataset(str(state / "warehouse" / "page_views"), format="parquet", partitioning="hive").to_table()
    rows = list(zip(table.column("user").to_pylist(), table.column("ts").to_pylist()))
    assert sorted(rows) == sorted((v.user, v.ts) for v in generator.events(TOTAL, start))
    assert set(str(d) for d in table.column("dt").to_pylist()) == {
        datetime.fromtimestamp(v.ts / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
        for v in generator.events(TOTAL, start)}
