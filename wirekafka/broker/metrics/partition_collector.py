"""The figures read from every partition this broker holds when scraped: Kafka's ReplicaManager
gauges (partitions, leaders, under-replicated, under and at min ISR, offline replicas) and its Log
gauges per partition (size, log start and end offsets).

O(partitions) on the event loop, one pass, handing the loop back every CHUNK partitions, so a
scrape of a broker with 10,000 partitions never holds the loop for more than a few milliseconds
at a time. Between chunks partitions may come and go: one seen offline or gone is skipped, and
the figures are those of the moment each partition was read, as a JMX scrape of Kafka's gauges
is."""

from __future__ import annotations

from typing import Iterable

import trio
from prometheus_client.core import GaugeMetricFamily, Metric

from wirekafka.broker.replica.partition import Partition

CHUNK = 1000


async def partition_families(partitions: Iterable[Partition]) -> tuple[list[Metric], int]:
    """The families, and how many of the partitions were offline."""
    size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's log segments (kafka.log:type=Log,"
                             "name=Size)", labels=["topic", "partition"])
    start = GaugeMetricFamily("kafka_log_log_logstartoffset", "The partition's log start offset (kafka.log:"
                              "type=Log,name=LogStartOffset)", labels=["topic", "partition"])
    end = GaugeMetricFamily("kafka_log_log_logendoffset", "The partition's log end offset (kafka.log:type=Log,"
                            "name=LogEndOffset)", labels=["topic", "partition"])
    count = leaders = under_replicated = under_min_isr = at_min_isr = offline = 0
    for i, p in enumerate(list(partitions)):
        if i and i % CHUNK == 0:
            await trio.lowlevel.checkpoint()
        count += 1
        if not p.online:
            offline += 1
            continue
        labels = [p.topic, str(p.index)]
        size.add_metric(labels, p.size_bytes)
        start.add_metric(labels, p.log_start_offset)
        end.add_metric(labels, p.log_end_offset)
        rs = p.replica_set
        if not rs.is_leader:
            continue
        leaders += 1
        isr = len(rs.isr)
        under_replicated += isr < len(rs.replicas)
        min_isr = rs.effective_min_isr(p.min_insync_replicas)
        under_min_isr += isr < min_isr
        at_min_isr += isr == min_isr
    gauges = [
        ("partitioncount", count, "Partitions this broker holds a replica of"),
        ("leadercount", leaders, "Partitions this broker leads"),
        ("underreplicatedpartitions", under_replicated, "Partitions led here whose ISR is smaller than their "
                                                        "replica set"),
        ("underminisrpartitioncount", under_min_isr, "Partitions led here whose ISR is below min.insync.replicas"),
        ("atminisrpartitioncount", at_min_isr, "Partitions led here whose ISR is at min.insync.replicas"),
        ("offlinereplicacount", offline, "Replicas held here that are offline (their log directory failed)"),
    ]
    out: list[Metric] = [size, start, end]
    for name, value, doc in gauges:
        out.append(GaugeMetricFamily(f"kafka_server_replicamanager_{name}",
                                     f"{doc} (kafka.server:type=ReplicaManager)", value=value))
    return out, offline
