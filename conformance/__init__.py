"""Protocol scenarios that run unchanged against wirekafka and real Apache Kafka."""
