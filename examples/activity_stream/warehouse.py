"""Read the job's Parquet warehouse the way Spark's file sink defines it: only committed files.

Spark's streaming file sink writes a micro-batch's Parquet files first and then records them in
the table's `_spark_metadata` log (one file per batch, "v1" then one JSON entry per line, and a
`<batch>.compact` file every few batches holding everything up to it). A driver killed between the
two leaves files that no batch committed; the replayed batch writes new ones. So a loader that
listed the directory would count those events twice; reading through the log counts them once.

    python -m examples.activity_stream.warehouse ./activity-state/warehouse/page_views
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from urllib.parse import unquote, urlparse


def committed_files(table: Path) -> list[Path]:
    """The Parquet files the sink's metadata log lists as added and not since deleted."""
    log_dir = table / "_spark_metadata"
    batches = {}
    for f in log_dir.iterdir():
        stem, _, suffix = f.name.partition(".")
        if stem.isdigit() and suffix in ("", "compact"):
            batches[int(stem)] = f
    compacted = [b for b, f in batches.items() if f.name.endswith(".compact")]
    first = max(compacted, default=0)  # a compact file replaces every entry before it
    files: dict[str, None] = {}
    for batch in sorted(b for b in batches if b >= first):
        lines = batches[batch].read_text().splitlines()
        if lines[:1] != ["v1"]:
            raise ValueError(f"unknown file sink log version in {batches[batch]}: {lines[:1]}")
        for line in lines[1:]:
            entry = json.loads(line)
            if entry["action"] == "add":
                files[entry["path"]] = None
            elif entry["action"] == "delete":
                files.pop(entry["path"], None)
    return [Path(unquote(urlparse(p).path)) for p in files]


def read_table(table: Path):
    """The committed rows as a pyarrow Table, with the `dt` partition column."""
    import pyarrow.dataset as ds

    return ds.dataset([str(p) for p in committed_files(table)], format="parquet", partitioning="hive",
                      partition_base_dir=str(table)).to_table()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", type=Path)
    args = ap.parse_args()
    table = read_table(args.table)
    per_day = table.group_by("dt").aggregate([("user", "count")]).sort_by("dt")
    for dt, n in zip(per_day.column("dt").to_pylist(), per_day.column("user_count").to_pylist()):
        print(f"dt={dt}  {n} page views")


if __name__ == "__main__":
    main()
