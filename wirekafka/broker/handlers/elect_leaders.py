"""ElectLeaders (key 43), v0-2: preferred (0) or unclean (1) leader election (kafka-leader-election).

- Named partitions each get a result: NONE when a new leader was elected, ELECTION_NOT_NEEDED when
  the preferred replica already leads (preferred) or a live leader exists (unclean),
  PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica qualifies,
  UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist. A null partition list means
  every partition, and then every topic is listed with only its partitions that needed an
  election, as Kafka does.
- One node is every partition's preferred replica and leader: nothing ever needs an election.
- An unknown election type is INVALID_REQUEST for the whole request (v1+ top-level error).
- Authorization, as Kafka's controller checks it: ALTER on the cluster, else
  CLUSTER_AUTHORIZATION_FAILED for the request (v1+) and for each named partition, with a
  message (Kafka's error answer to the whole request), before anything else is looked at."""

from __future__ import annotations

from kafka.protocol.admin.topics import ElectLeadersResponse
from kafka.protocol.admin.topics import ElectLeadersRequest

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode

_Result = ElectLeadersResponse.ReplicaElectionResult
_Part = _Result.PartitionResult


def _refused(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    """Kafka's answer to an ElectLeaders it refuses as a whole: the error everywhere."""
    code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    requested = request.topic_partitions or []
    return ElectLeadersResponse(version=ctx.version, throttle_time_ms=0, error_code=code, replica_election_results=[
        _Result(topic=t.topic, partition_result=[_Part(partition_id=p, error_code=code, error_message=message)
                                                 for p in t.partitions]) for t in requested])


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _refused(ctx, request)
    election_type = getattr(request, "election_type", 0)
    if election_type not in (0, 1):
        return ElectLeadersResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                    replica_election_results=[])
    requested = request.topic_partitions
    wanted = None if requested is None else [(t.topic, p) for t in requested for p in t.partitions]
    if ctx.state.metadata.controller_id() != ctx.state.node_id:
        # decided by the controller alone, which knows the brokers in controlled shutdown (Kafka
        # 3.9's KafkaController: NOT_CONTROLLER for each partition asked, none for "all")
        return ElectLeadersResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                    replica_election_results=[
                                        _Result(topic=t.topic, partition_result=[
                                            _Part(partition_id=p, error_code=ErrorCode.NOT_CONTROLLER,
                                                  error_message=None) for p in t.partitions])
                                        for t in requested or []])
    answers = await ctx.state.metadata.elect_leaders(election_type, wanted, request.timeout_ms / 1000)
    by_topic: dict[str, list[_Part]] = {}
    if wanted is None:
        for t in ctx.state.metadata.all_topics():
            by_topic[t.name] = []
    for (topic, index), (code, message) in answers.items():
        by_topic.setdefault(topic, []).append(_Part(partition_id=index, error_code=code,
                                                    error_message=None if code == ErrorCode.NONE else message))
    return ElectLeadersResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                replica_election_results=[_Result(topic=t, partition_result=parts)
                                                          for t, parts in by_topic.items()])
