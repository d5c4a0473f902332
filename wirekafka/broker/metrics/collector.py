"""A scrape: every family, built from the broker's counters and state at that moment.

Names are those the Prometheus JMX exporter's Kafka rules (example_configs/kafka-2_0_0.yml)
make of Kafka's MBeans: `kafka_<domain>_<type>_<name>` lower-cased, `_total` for a *PerSec
meter's count, the MBean's other keys as labels; a series without a topic label is the
all-topics MBean. docs/metrics.md maps each family to its MBean."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from wirekafka.broker.metrics.api_names import request_name
from wirekafka.broker.metrics.histogram import Histogram
from wirekafka.broker.metrics.partition_collector import partition_families
from wirekafka.broker.metrics.request_metrics import RequestMetrics
from wirekafka.broker.metrics.socket_metrics import SocketMetrics
from wirekafka.broker.metrics.topic_metrics import TopicMetrics
from wirekafka.broker.metadata.zk.backend import ZkBackend
from wirekafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wirekafka.broker.state import BrokerState


async def collect(state: BrokerState) -> list[Metric]:
    metrics = state.metrics
    out: list[Metric] = []
    if metrics.loop is not None:  # first: read before this scrape's own chunks run on the loop
        out += metrics.loop.families()
    if metrics.requests is not None:
        out += request_families(metrics.requests)
    if metrics.topics is not None:
        out += topic_families(metrics.topics)
    out += socket_families(metrics.sockets)
    families, offline = await partition_families(state.metadata.iter_partitions())
    out += families
    out += cluster_families(state, offline)
    out.append(histogram_family("kafka_log_logflushstats_logflushrateandtimems", "Time to flush a log, ms (kafka.log:"
                                "type=LogFlushStats,name=LogFlushRateAndTimeMs)", {"": state.replicas.flush_times}, None))
    out += cleaner_families(state)
    return out


def request_families(requests: RequestMetrics) -> list[Metric]:
    counts = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered (kafka.network:"
                                 "type=RequestMetrics,name=RequestsPerSec)", labels=["request", "version"])
    errors = CounterMetricFamily("kafka_network_requestmetrics_errors", "Error codes answered, NONE included "
                                 "(kafka.network:type=RequestMetrics,name=ErrorsPerSec)", labels=["request", "error"])
    for api_key, stats in sorted(requests.apis.items()):
        name = request_name(api_key)
        for version, n in sorted(stats.versions.items()):
            counts.add_metric([name, str(version)], n)
        for code, n in sorted(stats.errors.items()):
            errors.add_metric([name, _error_name(code)], n)
    times = histogram_family("kafka_network_requestmetrics_totaltimems", "Time from a request read to its response "
                             "sent, ms (kafka.network:type=RequestMetrics,name=TotalTimeMs)",
                             {request_name(k): s.total_time_ms for k, s in sorted(requests.apis.items())
                              if s.total_time_ms.count}, "request")
    queue = GaugeMetricFamily("kafka_network_requestchannel_requestqueuesize", "Requests read and not yet answered "
                              "(kafka.network:type=RequestChannel,name=RequestQueueSize)", value=requests.in_flight)
    return [counts, errors, times, queue]


def topic_families(topics: TopicMetrics) -> list[Metric]:
    """Each BrokerTopicMetrics meter, per topic and (without the label) for all topics."""
    out: list[Metric] = []
    for attribute, meter, doc in _TOPIC_METERS:
        name = f"kafka_server_brokertopicmetrics_{meter}"
        family = Metric(name, f"{doc} (kafka.server:type=BrokerTopicMetrics,name={_MBEAN[meter]})", "counter")
        family.add_sample(name + "_total", {}, topics.total(attribute))
        for topic, counts in sorted(topics.topics.items()):
            family.add_sample(name + "_total", {"topic": topic}, getattr(counts, attribute))
        out.append(family)
    return out


_TOPIC_METERS: list[tuple[str, str, str]] = [
    ("messages_in", "messagesin", "Records appended by producers"),
    ("bytes_in", "bytesin", "Bytes of record batches appended by producers"),
    ("bytes_out", "bytesout", "Bytes of records sent to consumers"),
    ("produce_requests", "totalproducerequests", "Partitions produced to"),
    ("fetch_requests", "totalfetchrequests", "Partitions fetched by consumers"),
]
_MBEAN = {"messagesin": "MessagesInPerSec", "bytesin": "BytesInPerSec", "bytesout": "BytesOutPerSec",
          "totalproducerequests": "TotalProduceRequestsPerSec", "totalfetchrequests": "TotalFetchRequestsPerSec"}


def socket_families(sockets: SocketMetrics) -> list[Metric]:
    """socket-server-metrics per listener (networkProcessor "0": one event loop serves them all)."""
    out: list[Metric] = []
    for name, table, kind, doc in (
            ("connection_count", sockets.connections, "gauge", "Connections open"),
            ("failed_authentication", sockets.failed_authentications, "counter", "Failed authentications"),
            ("successful_authentication", sockets.successful_authentications, "counter",
             "Successful authentications")):
        full = f"kafka_server_socket_server_metrics_{name}"
        family: Metric
        if kind == "gauge":
            family = GaugeMetricFamily(full, f"{doc} (kafka.server:type=socket-server-metrics)",
                                       labels=["listener", "networkProcessor"])
        else:
            family = CounterMetricFamily(full, f"{doc} (kafka.server:type=socket-server-metrics)",
                                         labels=["listener", "networkProcessor"])
        for listener, n in sorted(table.items()):
            family.add_metric([listener, "0"], n)
        out.append(family)
    return out


def cluster_families(state: BrokerState, offline_here: int) -> list[Metric]:
    """The controller's gauges, ISR changes and the ZooKeeper session: a single node is its own
    controller (its offline partitions are its offline replicas) and has no ISR to change."""
    backend = state.cluster if isinstance(state.cluster, ZkBackend) else None
    if backend is None:
        active, offline, shrinks, expands = 1, offline_here, 0, 0
    else:
        snapshot = backend.view.snapshot
        active = int(snapshot.controller == state.node_id)
        # Kafka's controller alone reports OfflinePartitionsCount (every other broker reports 0)
        offline = 0 if not active else sum(s[0].leader < 0 for t in snapshot.topics.values() for s in t.states.values())
        shrinks, expands = backend.isr.shrinks, backend.isr.expands
    out: list[Metric] = [
        GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller "
                          "(kafka.controller:type=KafkaController,name=ActiveControllerCount)", value=active),
        GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a live "
                          "leader (kafka.controller:type=KafkaController,name=OfflinePartitionsCount)", value=offline),
        CounterMetricFamily("kafka_server_replicamanager_isrshrinks", "ISR shrinks of partitions led here "
                            "(kafka.server:type=ReplicaManager,name=IsrShrinksPerSec)", value=shrinks),
        CounterMetricFamily("kafka_server_replicamanager_isrexpands", "ISR expansions of partitions led here "
                            "(kafka.server:type=ReplicaManager,name=IsrExpandsPerSec)", value=expands),
    ]
    if backend is not None:
        zk = backend.zk
        session = GaugeMetricFamily("kafka_server_sessionexpirelistener_sessionstate", "1 for the ZooKeeper "
                                    "session's state (kafka.server:type=SessionExpireListener,name=SessionState)",
                                    labels=["state"])
        session.add_metric(["CONNECTED" if zk.connected else "NOT_CONNECTED"], 1)
        out += [session,
                CounterMetricFamily("kafka_server_sessionexpirelistener_zookeeperexpires", "ZooKeeper session "
                                    "expiries (kafka.server:type=SessionExpireListener,name=ZooKeeperExpiresPerSec)",
                                    value=zk.expires),
                CounterMetricFamily("kafka_server_sessionexpirelistener_zookeeperdisconnects", "ZooKeeper "
                                    "disconnections (kafka.server:type=SessionExpireListener,"
                                    "name=ZooKeeperDisconnectsPerSec)", value=zk.disconnects)]
    return out


def cleaner_families(state: BrokerState) -> list[Metric]:
    cleaner = state.cleaner
    since = (time.monotonic() - cleaner.last_round_end) * 1000 if cleaner.last_round_end is not None else 0.0
    uncleanable = GaugeMetricFamily("kafka_log_logcleanermanager_uncleanable_partitions_count", "Logs the cleaner "
                                    "gave up on (kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count)",
                                    labels=["logDirectory"])
    uncleanable.add_metric([str(state.log_dir)], cleaner.uncleanable_count)
    return [
        GaugeMetricFamily("kafka_log_logcleaner_max_clean_time_secs", "Duration of the last cleaning round, s "
                          "(kafka.log:type=LogCleaner,name=max-clean-time-secs)", value=cleaner.last_round_seconds),
        GaugeMetricFamily("kafka_log_logcleaner_max_buffer_utilization_percent", "Offset map use in the last round, "
                          "% (kafka.log:type=LogCleaner,name=max-buffer-utilization-percent)",
                          value=cleaner.last_buffer_utilization * 100),
        GaugeMetricFamily("kafka_log_logcleaner_cleaner_recopy_percent", "Bytes written over bytes read in the last "
                          "round, % (kafka.log:type=LogCleaner,name=cleaner-recopy-percent)",
                          value=cleaner.last_recopy_ratio * 100),
        GaugeMetricFamily("kafka_log_logcleanermanager_time_since_last_run_ms", "Time since the last cleaning round "
                          "ended, ms; 0 before the first (kafka.log:type=LogCleanerManager,name=time-since-last-run-ms)",
                          value=since),
        uncleanable,
    ]


def histogram_family(name: str, doc: str, histograms: dict[str, Histogram], label: str | None) -> Metric:
    """A Prometheus histogram family; label None: one unlabelled histogram (the "" entry)."""
    family = HistogramMetricFamily(name, doc, labels=[label] if label is not None else None)
    for value, histogram in histograms.items():
        family.add_metric([value] if label is not None else [], histogram.cumulative(), histogram.total)
    return family


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
