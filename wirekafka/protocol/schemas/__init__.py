"""Kafka message schemas that kafka-python does not ship, as JSON in Kafka's schema language, read
by kafka-python's schema-driven classes (``load_json=`` this package).

Two kinds live here. APIs a ZooKeeper-mode Kafka 3.9 broker serves and Kafka 4's client schemas
dropped: AlterPartition (key 56), which leaders send to the controller, ControlledShutdown
(key 7), which a broker that is stopping sends it, and LeaderAndIsr (key 4), which the controller
sends a broker. And the records of Kafka's internal coordinator
topics, as Kafka 4.3.1's group and transaction coordinators ship them (OffsetCommitKey/Value,
GroupMetadataKey/Value, TransactionLogKey/Value; see `wirekafka.protocol.coordinator_records`)."""
