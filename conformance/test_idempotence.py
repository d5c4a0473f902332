"""InitProducerId and idempotent produce: sequences, duplicates, out-of-order and old epochs."""

from __future__ import annotations

import pytest
from kafka.protocol.producer.transaction import InitProducerIdRequest

from conformance.harness.scenarios import produce
from conformance.harness.wire import Connection, create_topic, retry_transient, unique
from wirekafka.protocol.records import build_batch


def _init(conn, version=4):
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                producer_epoch=-1)
    res = retry_transient(lambda: conn.call(req, version), lambda r: r.error_code)
    assert res.error_code == 0 and res.producer_id >= 0 and res.producer_epoch >= 0
    return res.producer_id, res.producer_epoch


def _batch(pid, epoch, seq, n=2):
    return build_batch([(None, b"v%d" % (seq + i), 1_700_000_000_000) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id(target, version):
    with Connection(target.bootstrap) as conn:
        a = _init(conn, version)
        b = _init(conn, version)
    assert a[0] != b[0]


def test_sequences_duplicates_and_gaps(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        pid, epoch = _init(conn)
        assert produce(conn, name, _batch(pid, epoch, 0)).base_offset == 0
        assert produce(conn, name, _batch(pid, epoch, 2)).base_offset == 2
        dup = produce(conn, name, _batch(pid, epoch, 0))   # a retry of the first batch
        assert (dup.error_code, dup.base_offset) == (0, 0)
        dup = produce(conn, name, _batch(pid, epoch, 2))
        assert (dup.error_code, dup.base_offset) == (0, 2)
        gap = produce(conn, name, _batch(pid, epoch, 9))
        assert gap.error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(conn, name, _batch(pid, epoch, 4)).base_offset == 4


def test_new_epoch_must_start_at_zero_and_old_epoch_is_fenced(target):
    name = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, name)
        pid, epoch = _init(conn)
        assert produce(conn, name, _batch(pid, epoch + 1, 0)).error_code == 0
        assert produce(conn, name, _batch(pid, epoch, 2)).error_code == 47  # INVALID_PRODUCER_EPOCH
        assert produce(conn, name, _batch(pid, epoch + 2, 5)).error_code == 45
