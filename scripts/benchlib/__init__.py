"""Helpers of ``scripts/bench.py``: wirekafka and real Kafka side by side, the same workloads on each.

Modules: :mod:`.brokers` (start/stop/kill the two brokers, RSS from /proc), :mod:`.workloads`
(confluent-kafka produce/consume/latency), :mod:`.netprobe` (raw-socket ApiVersions connections),
:mod:`.syscalls` (strace during a consume), :mod:`.recovery` (kill -9 and restart),
:mod:`.compaction` (__consumer_offsets bounded by the cleaner, cleaner throughput and latency),
:mod:`.cluster_rows` (3-broker clusters on ZooKeeper: wirekafka's and Kafka 3.9.1's; replicated
produce and failover),
:mod:`.report` (rows and the markdown table). They import as ``scripts.benchlib.*`` and the Kafka
launcher as ``scripts.realkafka`` (bench.py, run as a file, first puts the repository root on
``sys.path``).
"""
