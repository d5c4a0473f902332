"""Kafka message schemas that kafka-python does not ship, as JSON in Kafka's schema language, read
by kafka-python's schema-driven classes (`ApiMessage` with ``load_json=`` this package).

Only APIs a ZooKeeper-mode Kafka 3.9 broker serves and Kafka 4's client schemas dropped live here:
AlterPartition (key 56), which leaders send to the controller, and ControlledShutdown (key 7),
which a broker that is stopping sends it."""
