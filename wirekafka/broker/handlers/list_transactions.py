"""ListTransactions (key 66), v0-2: the transactional ids this coordinator knows, filtered by
state (Kafka's state names; unknown names are echoed in unknown_state_filters), producer id,
duration (v1: open at least that long) and a transactional id regular expression (v2). Only the
ids the principal may DESCRIBE are listed (Kafka's filter; no error for the others)."""

from __future__ import annotations

import re

from kafka.protocol.admin.transactions import ListTransactionsRequest, ListTransactionsResponse

from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.context import RequestContext
from wirekafka.broker.coordinator.txn_records import TxnState
from wirekafka.protocol.errors import ErrorCode

_State = ListTransactionsResponse.TransactionState
_KNOWN = {s.kafka_name for s in TxnState}


def handle(ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    r = request
    wanted = set(r.state_filters)
    unknown = sorted(wanted - _KNOWN)
    pattern = getattr(r, "transactional_id_pattern", None) or None
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error:
            return ListTransactionsResponse(version=ctx.version, throttle_time_ms=0,
                                            error_code=ErrorCode.INVALID_REQUEST, unknown_state_filters=[],
                                            transaction_states=[])
    found = ctx.state.transactions.list(wanted & _KNOWN if wanted else set(), set(r.producer_id_filters),
                                        getattr(r, "duration_filter", -1), pattern)
    if wanted and not wanted & _KNOWN:
        found = []
    visible = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                   {m.transactional_id for m in found})
    found = [m for m in found if m.transactional_id in visible]
    return ListTransactionsResponse(
        version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown,
        transaction_states=[_State(transactional_id=m.transactional_id, producer_id=m.producer_id,
                                   transaction_state=m.state.kafka_name) for m in found])
