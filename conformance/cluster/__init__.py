"""Cluster scenarios run the same way on a wirekafka cluster (compat-tests/test_cluster*.py,
test_zookeeper_security.py) and on a real Kafka 3.9 ZooKeeper-mode cluster
(compat-tests/test_zookeeper_launcher.py): one function per scenario, so both are held to the
same test. The launchers they run on stay in testsupport/."""
