"""The per-IP connection creation rate quota (connection_creation_rate of an ip entity, KIP-612)
on a real wirekafka process, and the same scenario on real Kafka 4.3.1, so that both are seen
to behave alike.

With connection_creation_rate=2 for 127.0.0.1, a fresh address is measured over the padded
window of 10 s: its first 20 connections are served; the next ones are accepted, held unread
for the throttle time ((21/10 - 2) / 2 x 10 s = 500 ms at most here), then closed without an
answer. Removing the quota lets new connections through at once."""

from __future__ import annotations

import time

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from raw_connections import connect_with_api_versions, outcomes, wirekafka_and_kafka

from conformance.harness.wire import Connection

RATE = "connection_creation_rate"
QUOTA = 2
BURST = 10 * QUOTA  # (quota.window.num - 1) x quota.window.size.seconds x quota
_Entry = AlterClientQuotasRequest.EntryData

bootstrap = wirekafka_and_kafka({})


def _set_quota(admin: Connection, value: float | None) -> None:
    """connection_creation_rate of ip 127.0.0.1 (None: removed), once the broker describes it."""
    op = _Entry.OpData(key=RATE, value=0.0 if value is None else value, remove=value is None)
    answer = admin.call(AlterClientQuotasRequest(entries=[_Entry(
        entity=[_Entry.EntityData(entity_type="ip", entity_name="127.0.0.1")], ops=[op])], validate_only=False), 1)
    assert [e.error_code for e in answer.entries] == [0]
    wanted = [] if value is None else [(RATE, value)]
    component = DescribeClientQuotasRequest.ComponentData(entity_type="ip", match_type=0, match="127.0.0.1")
    deadline = time.monotonic() + 10
    while True:  # Kafka applies it once the controller's record reaches the broker
        described = admin.call(DescribeClientQuotasRequest(components=[component], strict=True), 1)
        if [(v.key, v.value) for e in described.entries for v in e.values] == wanted:
            break
        assert time.monotonic() < deadline, f"the broker did not describe {wanted}"
        time.sleep(0.05)
    time.sleep(0.3)  # Kafka's quota manager is told right after its metadata cache


def test_connection_rate_quota_holds_then_closes_connections_over_it(bootstrap: str) -> None:
    port = int(bootstrap.rsplit(":", 1)[1])
    with Connection(bootstrap) as admin:  # opened before the quota: not counted
        _set_quota(admin, QUOTA)
        burst = outcomes(connect_with_api_versions(port, BURST))
        assert [o for o, _ in burst] == ["answered"] * BURST, burst

        over = outcomes(connect_with_api_versions(port, 10))
        assert all(o in ("answered", "closed") for o, _ in over), over  # none left hanging
        held = [seconds for o, seconds in over if o == "closed"]
        assert held, f"none of the connections after the first {BURST} was refused: {over}"
        # each was accepted, kept unread for its throttle time (about 500 ms minus the time since
        # the burst began; Kafka's acceptor looks at most every 500 ms), then closed
        assert held[0] >= 0.2, over
        assert max(held) < 2.0, over

        _set_quota(admin, None)
        after = outcomes(connect_with_api_versions(port, 5))
        assert [o for o, _ in after] == ["answered"] * 5, after
