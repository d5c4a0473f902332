"""The broker's metrics, under the names the Prometheus JMX exporter's Kafka rules give Kafka's
MBeans (docs/metrics.md lists them). Counters on the request and produce/fetch paths are plain
integers bumped once per request or per partition (never per record) and exist only when the
endpoint is configured; everything else is read from the broker's state when scraped
(collector.py), so an idle family costs nothing. The HTTP endpoint is server/metrics_endpoint.py."""
