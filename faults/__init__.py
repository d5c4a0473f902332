"""The nemesis suite (issue 34): one seeded fault schedule run against a wirekafka cluster and a
Kafka 3.9 ZooKeeper-mode cluster side by side, with checkers on what clients were acknowledged."""
