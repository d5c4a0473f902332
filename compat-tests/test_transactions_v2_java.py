"""Transaction version 2 (KIP-890 part 2) with Kafka's Java client (kafka-clients 4.3.1): against
a single-node wirekafka, which finalizes transaction.version 2 as a fresh Kafka 4.3.1 cluster
does, the producer turns version 2 on (it adds partitions through Produce v12 and sends no
AddPartitionsToTxn) and every commit or abort moves it to the next epoch, which the markers
carry into each partition's producer state.

The producer is compat-tests/java/TransactionVersionProducer.java (the client's own view, read by
reflection); the same test passes against real Kafka with WIREKAFKA_EXTERNAL_BOOTSTRAP=host:port."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_cli import ok as _ok
from kafka_cli import table
from test_transactions_java import QUICK_JVM, _read
from txn_support import create_topics, settled_end

pytestmark = [pytest.mark.java, pytest.mark.timeout(180)]

PRODUCER_SOURCE = Path(__file__).resolve().parent / "java" / "TransactionVersionProducer.java"


def ok(name: str, *args: str) -> str:
    return _ok(name, *args, jvm_opts=QUICK_JVM)


def test_java_producer_uses_transaction_version_2(broker, topic_name: str) -> None:
    b = broker.bootstrap
    create_topics(b, (topic_name, 2))
    out = ok(str(PRODUCER_SOURCE), b, topic_name, f"tx-{topic_name}")
    assert out.splitlines() == ["initialized tv2=true epoch=0", "committed tv2=true epoch=1",
                                "aborted tv2=true epoch=2", "committed tv2=true epoch=3"]
    # each partition: a record and a marker per transaction
    for p in range(2):
        settled_end(b, topic_name, p, 6)
    committed = _read(b, topic_name, "read_committed", 6)
    assert [(p, o, v) for p, o, v in committed if p == 0] == [(0, 0, b"committed-0-0"), (0, 4, b"committed-2-0")]
    everything = _read(b, topic_name, "read_uncommitted", 6)
    assert [v for p, _, v in everything if p == 0] == [b"committed-0-0", b"aborted-1-0", b"committed-2-0"]
    # the last marker of each partition carries the epoch the last EndTxn moved the producer to
    for p in range(2):
        [producer] = table(ok("kafka-transactions", "--bootstrap-server", b, "describe-producers", "--topic",
                              topic_name, "--partition", str(p)), "ProducerId")
        assert (producer["ProducerEpoch"], producer["LastSequence"], producer["CurrentTransactionStartOffset"]) \
            == ("3", "-1", "None")
    # a tab-separated table whose TopicPartitions cell is empty once the transaction completed
    header, row = ok("kafka-transactions", "--bootstrap-server", b, "describe", "--transactional-id",
                     f"tx-{topic_name}").splitlines()
    described = dict(zip((h.strip() for h in header.split("\t")), (c.strip() for c in row.split("\t"))))
    assert (described["ProducerEpoch"], described["TransactionState"], described["TopicPartitions"]) == \
        ("3", "CompleteCommit", "")
