"""CreateTopics (key 19), v2-7.

- Partitions and replication factor, -1 meaning the broker defaults (num.partitions,
  default.replication.factor); a manual assignment must name only this node, once per partition.
- Replication factor above 1 is INVALID_REPLICATION_FACTOR (one broker), as Kafka says it.
- Per-topic configs are validated (INVALID_CONFIG) and stored as topic overrides.
- validate_only checks everything and creates nothing; the answer still carries a fresh topic
  id, as Kafka's controller draws one before it validates (the id is then never used).
- v5+ responses carry the resulting partitions, replication factor and every topic config with
  its source; v7+ the topic id.
- A name given twice in one request is INVALID_REQUEST for that name."""

from __future__ import annotations

import uuid
from collections import Counter

from kafka.protocol.admin.topics import CreateTopicsResponse

from wirekafka.broker import topic_config
from wirekafka.broker import mutation_quota
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

# Kafka's controller mutation quota fails topics outright (THROTTLING_QUOTA_EXCEEDED) from this version
STRICT_QUOTA_FROM = 6

_Result = CreateTopicsResponse.CreatableTopicResult
_Config = _Result.CreatableTopicConfigs


def _config_entries(ctx: RequestContext, overrides: dict[str, str]) -> list:
    out = []
    for name in topic_config.listed_configs(overrides):
        value, source = topic_config.effective(name, overrides, ctx.state.config, ctx.state.metadata.broker_configs)
        out.append(_Config(name=name, value=value, read_only=False, config_source=source, is_sensitive=False))
    return out


async def handle(ctx: RequestContext, request: object) -> CreateTopicsResponse:
    state = ctx.state
    validate_only = bool(getattr(request, "validate_only", False))
    counts = Counter(t.name for t in request.topics)  # type: ignore[attr-defined]
    results = []
    permits = mutation_quota.permits(ctx, STRICT_QUOTA_FROM)
    for t in request.topics:  # type: ignore[attr-defined]
        configs = {c.name: c.value for c in t.configs}
        try:
            if counts[t.name] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Create topics request from client contains "
                                    f"multiple entries for the following topics: {t.name}")
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor "
                                        "and replicasAssignments were set. Both cannot be used at the same time.")
                indexes = sorted(a.partition_index for a in t.assignments)
                if indexes != list(range(len(indexes))):
                    raise KafkaApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered from 0")
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
                partitions, rf = len(indexes), len(assignment[0])
            else:
                assignment = None
                partitions = state.config.int("num.partitions") if t.num_partitions == -1 else t.num_partitions
                rf = state.config.int("default.replication.factor") if t.replication_factor == -1 else t.replication_factor
            state.metadata.validate_new_topic(t.name, partitions, rf, configs, assignment)
            permits.take(partitions)  # Kafka 4 charges validate_only too
            if validate_only:
                topic_id = uuid.uuid4()
            else:
                topic_id = (await state.metadata.create_topic(t.name, partitions, configs, rf, assignment)).topic_id
            results.append(_Result(name=t.name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None,
                                   num_partitions=partitions, replication_factor=rf,
                                   configs=_config_entries(ctx, configs)))
        except KafkaApiError as exc:
            results.append(_Result(name=t.name, topic_id=uuid.UUID(int=0), error_code=exc.code,
                                   error_message=exc.message, num_partitions=-1, replication_factor=-1, configs=[]))
    return CreateTopicsResponse(version=ctx.version, throttle_time_ms=mutation_quota.throttle(ctx, permits),
                                topics=results)
