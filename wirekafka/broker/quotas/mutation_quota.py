"""A request's use of Kafka's controller mutation quota (controller_mutation_rate, KIP-599):
CreateTopics, CreatePartitions and DeleteTopics take one permit per partition they create or
delete from their client's bucket (broker/client_quota_manager.py), and answer with the
throttle time left, for which the connection is muted."""

from __future__ import annotations

from wirekafka.broker.quotas.client_quota_manager import MutationPermits
from wirekafka.broker.context import RequestContext


def permits(ctx: RequestContext, strict_from_version: int) -> MutationPermits:
    """This request's permits: strict from the version Kafka makes it strict (a topic asked for
    while in debt fails), permissive below."""
    return ctx.state.client_quotas.mutation.for_request(ctx.principal, ctx.client_id,
                                                        ctx.version >= strict_from_version)


def throttle(ctx: RequestContext, used: MutationPermits) -> int:
    """The throttle time left when the response is ready; the connection is muted for it."""
    left = used.throttle_ms()
    ctx.mute(left)
    return left
