"""The activity-stream pipeline: page views -> Kafka -> Spark -> counts topic + Parquet warehouse."""
