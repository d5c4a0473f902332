"""The Structured Streaming job: page views per page per one-minute event-time window.

Reads the page-view topic with Spark's Kafka connector, parses the JSON events, and runs two
queries, each with its own checkpoint under <state>/checkpoints/ (Kafka offsets live there, so a
stopped or crashed job continues where it was):
- counts: a 1-minute tumbling window per page with a 1-minute watermark, in update mode, written
  to a compacted topic keyed "page|window start" whose latest value is the window's count so far.
  A micro-batch replayed after a crash recomputes the same counts from the state store, so the
  latest value per key is exact even when a record is written twice;
- warehouse: the raw events appended to Parquet under <state>/warehouse/page_views, partitioned by
  date (dt=YYYY-MM-DD). Spark's file sink lists committed files in _spark_metadata; readers go
  through warehouse.committed_files().

    python -m examples.activity_stream.job --bootstrap 127.0.0.1:9092 --state ./activity-state [--available-now]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from examples.activity_stream.generator import ensure_topic
from examples.activity_stream.spark_session import spark_session

log = logging.getLogger("activity_stream.job")

WAREHOUSE_TABLE = Path("warehouse") / "page_views"


def start_queries(spark, bootstrap: str, source: str, counts_topic: str, state: Path, available_now: bool,
                  max_offsets_per_trigger: int) -> list:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("user", StringType()), StructField("page", StringType()),
                         StructField("ts", LongType())])
    events = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger)).load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("e")).select("e.*")
              .withColumn("event_time", F.timestamp_millis("ts")))

    def trigger(writer):
        return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="2 seconds")

    counts = (events.withWatermark("event_time", "1 minute")
              .groupBy(F.window("event_time", "1 minute"), "page").count()
              .select(F.concat_ws("|", "page", F.date_format("window.start", "yyyy-MM-dd'T'HH:mm'Z'")).alias("key"),
                      F.to_json(F.struct("page", F.col("window.start").alias("window_start"),
                                         F.col("window.end").alias("window_end"), "count")).alias("value")))
    counts_query = trigger(counts.writeStream.queryName("counts").outputMode("update").format("kafka")
                           .option("kafka.bootstrap.servers", bootstrap).option("topic", counts_topic)
                           .option("checkpointLocation", str(state / "checkpoints" / "counts"))).start()
    warehouse_query = trigger(events.withColumn("dt", F.to_date("event_time")).writeStream.queryName("warehouse")
                              .format("parquet").partitionBy("dt").option("path", str(state / WAREHOUSE_TABLE))
                              .option("checkpointLocation", str(state / "checkpoints" / "warehouse"))).start()
    return [counts_query, warehouse_query]


def run(bootstrap: str, source: str, counts_topic: str, state: Path, *, available_now: bool,
        seconds: float | None = None, max_offsets_per_trigger: int = 400) -> None:
    """Run both queries: until the input present at start is processed (available_now), or until
    `seconds` pass (None: until a query fails or the process is stopped)."""
    ensure_topic(bootstrap, counts_topic, 1, {"cleanup.policy": "compact"})
    spark = spark_session("activity-stream")
    try:
        queries = start_queries(spark, bootstrap, source, counts_topic, state, available_now,
                                max_offsets_per_trigger)
        if available_now:
            for q in queries:
                q.awaitTermination()  # raises StreamingQueryException if the query failed
        else:
            spark.streams.awaitAnyTermination(seconds)
        for q in queries:
            q.stop()
            batches = [p["batchId"] for p in q.recentProgress if p["numInputRows"]]
            log.info("query %s: %d micro-batches with input this run", q.name, len(batches))
    finally:
        spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--source", default="page-views")
    ap.add_argument("--counts-topic", default="page-view-counts")
    ap.add_argument("--state", type=Path, default=Path("activity-state"))
    ap.add_argument("--available-now", action="store_true", help="process what is there, then stop")
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long (continuous mode)")
    ap.add_argument("--max-offsets-per-trigger", type=int, default=400, help="records per micro-batch at most")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    run(args.bootstrap, args.source, args.counts_topic, args.state, available_now=args.available_now,
        seconds=args.seconds, max_offsets_per_trigger=args.max_offsets_per_trigger)


if __name__ == "__main__":
    main()
