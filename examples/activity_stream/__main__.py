"""The whole pipeline in one command, against a running broker: generate page views, run the
streaming job over everything there is (Spark's availableNow trigger), print the top pages and the
warehouse's rows per day.

    python -m examples.activity_stream --bootstrap 127.0.0.1:9092 [--count 600] [--state ./activity-state]

Run it again to add the next --count events: the generator continues the series (kept in
<state>/series.json) and the job continues from its checkpoints."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from examples.activity_stream import generator, job, top_pages, warehouse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--source", default="page-views")
    ap.add_argument("--counts-topic", default="page-view-counts")
    ap.add_argument("--state", type=Path, default=Path("activity-state"))
    ap.add_argument("--count", type=int, default=600)
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    # The series so far (kept beside the checkpoints): a rerun continues it in event time, so its
    # events are never behind the job's watermark.
    series = args.state / "series.json"
    start, already = (json.loads(series.read_text()).values() if series.exists()
                      else (generator.default_start(), 0))
    generator.ensure_topic(args.bootstrap, args.source)
    generator.produce(args.bootstrap, args.source, generator.events(args.count, start, offset=already))
    args.state.mkdir(parents=True, exist_ok=True)
    series.write_text(json.dumps({"start": start, "count": already + args.count}))
    logging.info("produced page views %d..%d to %s", already, already + args.count - 1, args.source)
    job.run(args.bootstrap, args.source, args.counts_topic, args.state, available_now=True)

    latest = top_pages.latest_counts(args.bootstrap, args.counts_topic)
    print(top_pages.render(latest, args.top))
    rows = warehouse.read_table(args.state / job.WAREHOUSE_TABLE).num_rows
    print(f"warehouse: {rows} page views in {args.state / job.WAREHOUSE_TABLE}")


if __name__ == "__main__":
    main()
