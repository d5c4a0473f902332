"""The explicit table api key -> handler, and the one place requests meet handlers.

A handler returns the response body (or None when no response is due: acks=0 produce).
A KafkaApiError escaping a handler, or any bug, becomes an error response where the schema has a
top-level error code; otherwise the connection is closed (the client retries elsewhere)."""

from __future__ import annotations

import inspect
import logging
from typing import Any, Callable

from wirekafka.broker.quotas import request_quota
from wirekafka.broker.context import CloseConnection, RequestContext
from wirekafka.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    acls,
    alter_configs,
    alter_partition,
    controlled_shutdown,
    leader_and_isr,
    client_quotas,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    elect_leaders,
    alter_partition_reassignments,
    list_partition_reassignments,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl,
    scram_credentials,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from wirekafka.protocol import schema_meta, served_versions as protocol_versions
from wirekafka.protocol.served_versions import SUPPORTED, response_class
from wirekafka.protocol.inter_broker import AlterPartitionRequest, ControlledShutdownRequest, LeaderAndIsrRequest
from wirekafka.protocol.response_parts import RegionResponse
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

log = logging.getLogger(__name__)

Handler = Callable[[RequestContext, Any], Any]

HANDLERS: dict[int, Handler] = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    8: offset_commit.handle,
    9: offset_fetch.handle,
    10: find_coordinator.handle,
    11: join_group.handle,
    12: heartbeat.handle,
    13: leave_group.handle,
    14: sync_group.handle,
    15: describe_groups.handle,
    16: list_groups.handle,
    17: sasl.handle_handshake,
    18: api_versions.handle,
    19: create_topics.handle,
    20: delete_topics.handle,
    21: delete_records.handle,
    22: init_producer_id.handle,
    23: offset_for_leader_epoch.handle,
    24: add_partitions_to_txn.handle,
    25: add_offsets_to_txn.handle,
    26: end_txn.handle,
    27: write_txn_markers.handle,
    28: txn_offset_commit.handle,
    29: acls.handle_describe,
    30: acls.handle_create,
    31: acls.handle_delete,
    32: describe_configs.handle,
    33: alter_configs.handle,
    35: describe_log_dirs.handle,
    36: sasl.handle_authenticate,
    37: create_partitions.handle,
    43: elect_leaders.handle,
    45: alter_partition_reassignments.handle,
    46: list_partition_reassignments.handle,
    42: delete_groups.handle,
    44: incremental_alter_configs.handle,
    47: offset_delete.handle,
    48: client_quotas.handle_describe,
    49: client_quotas.handle_alter,
    50: scram_credentials.handle_describe,
    51: scram_credentials.handle_alter,
    60: describe_cluster.handle,
    61: describe_producers.handle,
    65: describe_transactions.handle,
    66: list_transactions.handle,
    75: describe_topic_partitions.handle,
}


def register(api_key: int, handler: Handler) -> None:
    HANDLERS[api_key] = handler


def enable_zk_broker_apis() -> None:
    """Serve what a ZooKeeper-mode broker serves beyond the single node (api_versions.enable_zk_broker_apis)."""
    protocol_versions.enable_zk_broker_apis()
    register(AlterPartitionRequest.API_KEY, alter_partition.handle)
    register(ControlledShutdownRequest.API_KEY, controlled_shutdown.handle)
    register(LeaderAndIsrRequest.API_KEY, leader_and_isr.handle)


async def dispatch(ctx: RequestContext, body: Any) -> Any:
    handler = HANDLERS[ctx.header.api_key]
    request_quota.begin(ctx, body)
    try:
        result = handler(ctx, body)
        if inspect.isawaitable(result):
            result = await result
    except CloseConnection:
        request_quota.record(ctx)
        raise
    except KafkaApiError as exc:
        result = _error_response(ctx, exc.code, exc.message)
    except Exception:
        log.exception("bug handling api %d v%d correlation %d from %s (%s)", ctx.header.api_key,
                      ctx.header.api_version, ctx.header.correlation_id, ctx.peer, ctx.header.client_id)
        result = _error_response(ctx, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    set_throttle(result, request_quota.record(ctx))
    metrics = ctx.state.metrics.requests
    if metrics is not None and result is not None:  # RequestMetrics' ErrorsPerSec
        metrics.answered(ctx.header.api_key, result.body if isinstance(result, RegionResponse) else result)
    return result


def set_throttle(response: Any, throttle_ms: int) -> None:
    """Put a quota's throttle time into a response that has the field (the longest one counts;
    a version without the field leaves it out when encoded)."""
    if throttle_ms <= 0 or response is None:
        return
    body = response.body if isinstance(response, RegionResponse) else response
    if hasattr(body, "throttle_time_ms"):  # any response class, so read and written by name
        setattr(body, "throttle_time_ms", max(getattr(body, "throttle_time_ms") or 0, throttle_ms))
        if isinstance(response, RegionResponse):
            response.frame = None  # encoded before the change


def _error_response(ctx: RequestContext, code: ErrorCode, message: str | None) -> Any:
    cls = response_class(ctx.header.api_key)
    if not schema_meta.has_field(cls, "error_code"):
        raise CloseConnection(f"no way to report {code.name} for api {ctx.header.api_key}")
    kwargs: dict[str, Any] = {"error_code": code}
    if schema_meta.has_field(cls, "error_message"):
        kwargs["error_message"] = message
    return cls(version=ctx.version, **kwargs)


def check_table() -> None:
    """Every advertised API has a handler and vice versa (run at startup and in tests)."""
    missing = set(SUPPORTED) ^ set(HANDLERS)
    if missing:
        raise RuntimeError(f"APIs advertised without handler or handled without advertising: {sorted(missing)}")
