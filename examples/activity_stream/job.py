"""The Structured Streaming job: page views per page per one-minute event-time window.

Reads the page-view topic, parses the JSON events, and runs two queries sharing one checkpoint
root (so offsets live in Spark's checkpoint, and a restart continues where it stopped):
- counts: a 1-minute tumbling window per page with a 1-minute watermark, in update mode, written
  to a compacted topic keyed "page|window start" whose latest value is the window's count;
- warehouse: the raw events appended to Parquet files partitioned by date (dt=YYYY-MM-DD).

    python -m examples.activity_stream.job --bootstrap 127.0.0.1:9092 --state ./activity-state [--available-now]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("activity_stream.job")


def build_session(jars: list[str]):
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return (SparkSession.builder.master("local[2]").appName("activity-stream")
            .config("spark.jars", ",".join(jars))
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC").getOrCreate())


def connector_jars() -> list[str]:
    cache = Path(os.environ.get("WIREKAFKA_CACHE", Path.home() / ".cache" / "wirekafka"))
    jars = sorted(str(p) for p in (cache / "spark-4.0.0" / "jars").glob("*.jar"))
    if not jars:
        sys.exit("Spark's Kafka connector is missing: run scripts/setup_spark.sh")
    return jars


def start_queries(spark, bootstrap: str, source: str, counts_topic: str, state: Path, available_now: bool):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("user", StringType()), StructField("page", StringType()),
                         StructField("ts", LongType())])
    events = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "400").load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("e")).select("e.*")
              .withColumn("event_time", F.timestamp_millis("ts")))

    def trigger(writer):
        return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="2 seconds")

    counts = (events.withWatermark("event_time", "1 minute")
              .groupBy(F.window("event_time", "1 minute"), "page").count()
              .select(F.concat_ws("|", "page", F.date_format("window.start", "yyyy-MM-dd'T'HH:mm'Z'")).alias("key"),
                      F.to_json(F.struct("page", F.col("window.start").alias("window_start"),
                                         F.col("window.end").alias("window_end"), "count")).alias("value")))
    counts_query = trigger(counts.writeStream.outputMode("update").format("kafka")
                           .option("kafka.bootstrap.servers", bootstrap).option("topic", counts_topic)
                           .option("checkpointLocation", str(state / "checkpoints" / "counts"))).start()
    warehouse_query = trigger(events.withColumn("dt", F.to_date("event_time")).writeStream.format("parquet")
                              .partitionBy("dt").option("path", str(state / "warehouse" / "page_views"))
                              .option("checkpointLocation", str(state / "checkpoints" / "warehouse"))).start()
    return counts_query, warehouse_query


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--source", default="page-views")
    ap.add_argument("--counts-topic", default="page-view-counts")
    ap.add_argument("--state", type=Path, default=Path("activity-state"))
    ap.add_argument("--available-now", action="store_true", help="process what is there, then stop")
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long (continuous mode)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from examples.activity_stream.generator import ensure_topic

    ensure_topic(args.bootstrap, args.counts_topic, 1, {"cleanup.policy": "compact"})
    spark = build_session(connector_jars())
    spark.sparkContext.setLogLevel("ERROR")
    queries = start_queries(spark, args.bootstrap, args.source, args.counts_topic, args.state, args.available_now)
    timeout = None if args.seconds is None else args.seconds
    for q in queries:
        q.awaitTermination(timeout)
    for q in queries:
        if q.exception() is not None:
            raise SystemExit(f"query {q.name} failed: {q.exception()}")
        q.stop()
    log.info("job finished: %s", [q.lastProgress and q.lastProgress.get("batchId") for q in queries])
    spark.stop()


if __name__ == "__main__":
    main()
