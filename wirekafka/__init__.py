"""wirekafka: a single-node broker that speaks Apache Kafka's binary protocol."""

__version__ = "0.1.0"
