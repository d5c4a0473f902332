"""CreateTopics (key 19), v2-7.

- Partitions and replication factor, -1 meaning the broker defaults (num.partitions,
  default.replication.factor); a manual assignment must name only this node, once per partition.
- Replication factor above 1 is INVALID_REPLICATION_FACTOR (one broker), as Kafka says it.
- Per-topic configs are validated (INVALID_CONFIG) and stored as topic overrides.
- The topics of a request are validated in order, then created together; in a cluster each is
  answered once its partitions are online here, or REQUEST_TIMED_OUT (created all the same)
  after the request's timeout_ms, as Kafka answers.
- validate_only checks everything and creates nothing; the answer still carries a fresh topic
  id, as Kafka's controller draws one before it validates (the id is then never used).
- v5+ responses carry the resulting partitions, replication factor and every topic config with
  its source; v7+ the topic id.
- A name given twice in one request is one INVALID_REQUEST "Duplicate topic name." answer, after
  the topics created or refused by validation, as Kafka's controller answers.
- Authorization, as Kafka's ControllerApis checks it: CREATE on the cluster, or else CREATE on
  each topic; a topic without it is TOPIC_AUTHORIZATION_FAILED "Authorization failed.", listed
  last. Kafka lists the duplicates and then the refused topics from Java HashSets of names, so
  in their hash order, not the request's (kafka_name_sets). A topic created without DESCRIBE_CONFIGS on it (implied by ALTER_CONFIGS) is answered
  without its configs, partition count and replication factor, with topic_config_error_code
  TOPIC_AUTHORIZATION_FAILED (v5+)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterable, cast

import trio
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from wirekafka.broker.quotas import mutation_quota
from wirekafka.config import topic as topic_config
from wirekafka.security.acl.authorizer import AclOperation, ResourceType
from wirekafka.broker.quotas.client_quota_manager import MutationPermits
from wirekafka.broker.context import RequestContext
from wirekafka.jvm import java_hashmap_order
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


def _creatable(ctx: RequestContext, names: list[str]) -> set[str]:
    if ctx.authorized_cluster(AclOperation.CREATE):
        return set(names)
    return ctx.authorized_names(AclOperation.CREATE, ResourceType.TOPIC, names)


def kafka_name_sets(requested: Iterable[str]) -> tuple[list[str], list[str]]:
    """The names given once and the names given more than once, each in the iteration order of
    the Java HashSet Kafka's ControllerApis.createTopics keeps them in. A repeated name is added
    to the first set and removed from it again, so that set's table grows with the most names it
    held at once; within the grown table the remaining names keep their insertion order per bucket."""
    once: dict[str, None] = {}
    duplicates: dict[str, None] = {}
    table = 16
    for name in requested:
        if name in duplicates:
            continue
        if name in once:
            del once[name]
            duplicates[name] = None
            continue
        once[name] = None
        if len(once) > table * 3 // 4:
            table *= 2
    return java_hashmap_order(once, capacity=table), java_hashmap_order(duplicates)


def _refused(name: str, code: ErrorCode, message: str | None) -> _Result:
    return _Result(name=name, topic_id=uuid.UUID(int=0), error_code=code, error_message=message,
                   num_partitions=-1, replication_factor=-1, configs=[])


@dataclass(frozen=True)
class _Plan:
    """A topic of the request that passed validation: what to create."""

    name: str
    partitions: int
    replication_factor: int
    overrides: dict[str, str]
    assignment: dict[int, list[int]] | None


def _plan(ctx: RequestContext, t: CreateTopicsRequest.CreatableTopic, permits: MutationPermits) -> _Plan:
    """Validate one topic and take its partitions from the mutation quota (in request order)."""
    state = ctx.state
    configs = {c.name: c.value for c in t.configs}
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
    # it refuses null values, which its interface's dict[str, str] leaves out
    state.metadata.validate_new_topic(t.name, partitions, rf, cast("dict[str, str]", configs), assignment)
    overrides = {k: v for k, v in configs.items() if v is not None}  # all of them: nulls were refused
    permits.take(partitions)  # Kafka 4 charges validate_only too
    return _Plan(t.name, partitions, rf, overrides, assignment)


async def _create(ctx: RequestContext, plan: _Plan, validate_only: bool, describable: bool,
                  timeout_s: float | None) -> _Result:
    """Create one validated topic, waiting up to timeout_s for it to come online; its answer
    (configs only when `describable`)."""
    if validate_only:
        topic_id = uuid.uuid4()
    else:
        created = await ctx.state.metadata.create_topic(plan.name, plan.partitions, plan.overrides,
                                                        plan.replication_factor, plan.assignment,
                                                        timeout_s=timeout_s)
        if created is None:  # only a create_topic told not to wait returns none
            raise RuntimeError(f"topic {plan.name} was not created")
        topic_id = created.topic_id
    if not describable:
        return _Result(name=plan.name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None,
                       num_partitions=-1, replication_factor=-1, configs=[],
                       topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return _Result(name=plan.name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None,
                   num_partitions=plan.partitions, replication_factor=plan.replication_factor,
                   configs=_config_entries(ctx, plan.overrides))


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    validate_only = bool(getattr(request, "validate_only", False))
    names, duplicates = kafka_name_sets(t.name for t in request.topics)
    creatable = _creatable(ctx, names)
    describable = ctx.authorized_names(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names)
    # Kafka waits for the topics up to the request's timeout (none given: the broker's own bound)
    timeout_s = request.timeout_ms / 1000 if request.timeout_ms > 0 else None
    results: list[_Result | None] = []
    permits = mutation_quota.permits(ctx, STRICT_QUOTA_FROM)
    plans: list[tuple[int, _Plan]] = []
    for t in request.topics:
        if t.name not in creatable:
            continue
        try:
            plans.append((len(results), _plan(ctx, t, permits)))
            results.append(None)  # answered once created
        except KafkaApiError as exc:
            results.append(_refused(t.name, exc.code, exc.message))

    async def create(index: int, plan: _Plan) -> None:
        try:
            results[index] = await _create(ctx, plan, validate_only, plan.name in describable, timeout_s)
        except KafkaApiError as exc:
            results[index] = _refused(plan.name, exc.code, exc.message)

    # the topics are created together: each waits for its partitions to come online, as Kafka's
    # controller brings all of a request's topics online at once
    async with trio.open_nursery() as nursery:
        for index, plan in plans:
            nursery.start_soon(create, index, plan)
    answered = [r for r in results if r is not None]
    answered += [_refused(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for name in duplicates]
    answered += [_refused(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                 for name in names if name not in creatable]
    return CreateTopicsResponse(version=ctx.version, throttle_time_ms=mutation_quota.throttle(ctx, permits),
                                topics=answered)
