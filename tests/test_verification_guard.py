"""The leader's verification guard (ProducerStateTable.marker_stamp): a transaction coordinator's
answer about a producer's batch, asked before an await, holds at the append only if no marker of
that producer came meanwhile. Other producers' markers leave it alone: with one count per
partition, a busy partition voided the answers of every producer whose first batch was being
verified, and twelve concurrent transactional producers on a three-broker cluster failed with
INVALID_TXN_STATE (compat-tests/test_txn_verification_cluster.py)."""

from __future__ import annotations

from wirekafka.broker.replica.producer_state import ProducerStateTable


def test_only_the_producers_own_marker_voids_its_verification() -> None:
    table = ProducerStateTable()
    asked = table.marker_stamp(7)
    table.complete(8, 0, 0, marker_offset=10, timestamp=1, aborted=False)  # another producer's marker
    assert table.marker_stamp(7) == asked
    table.complete(7, 0, 0, marker_offset=11, timestamp=2, aborted=True)  # its own: the answer is stale
    assert table.marker_stamp(7) != asked
    again = table.marker_stamp(7)
    table.complete(8, 0, 0, marker_offset=12, timestamp=3, aborted=False)
    assert table.marker_stamp(7) == again


def test_dropping_the_state_voids_every_verification() -> None:
    table = ProducerStateTable()
    never_completed = table.marker_stamp(1)
    table.complete(2, 0, 0, marker_offset=0, timestamp=1, aborted=False)
    completed = table.marker_stamp(2)
    table.forget_all()  # truncated or restored from a snapshot: nothing asked before holds
    assert table.marker_stamp(1) != never_completed and table.marker_stamp(2) != completed


def test_an_expired_producer_leaves_no_stamp_behind() -> None:
    table = ProducerStateTable()
    table.complete(3, 0, 0, marker_offset=0, timestamp=1, aborted=False)
    assert table.remove_expired(now_ms=10_000, expiration_ms=100) == [3]
    assert table._marker_stamps == {}  # noqa: SLF001 - the table does not grow with producers gone
