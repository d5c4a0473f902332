"""The conformance suite's machinery, apart from its scenarios: the brokers it runs (own_brokers,
acl_brokers, broker_configs), the wire client and frames, recording and replaying client sessions,
comparing wirekafka's answers with Kafka's (compare, deviations.toml beside the suite), and the
coverage and MATRIX.md reports."""
