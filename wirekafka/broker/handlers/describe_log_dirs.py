"""DescribeLogDirs (key 35), v1-5 (Kafka 4 dropped v0).

- One result: the broker's log directory (the first of log.dirs, as an absolute path), error 0.
- In it, each requested partition the broker holds: its size (the bytes of its segments as they
  are now: after the cleaner swapped cleaned segments in, after retention deleted some), its
  offset lag (high watermark minus log end offset, never below 0: 0 on a leader) and
  is_future_key false. Requested partitions and topics the broker does not hold are left out,
  as Kafka leaves them out; a topic none of whose partitions is held is left out too.
  topics=null asks for every partition, internal topics included.
- Authorization: DESCRIBE on the cluster, else no results and (v3+) the top-level error code
  CLUSTER_AUTHORIZATION_FAILED.
- v3+: the top-level error code. v4+: the total and usable bytes of the
  volume holding the log directory (statvfs, read in a worker thread). v5: is_cordoned false.
Not implemented: several log directories, future logs (AlterReplicaLogDirs), offline
directories (KAFKA_STORAGE_ERROR)."""

from __future__ import annotations

import os

import trio
from kafka.protocol.admin.cluster import DescribeLogDirsRequest, DescribeLogDirsResponse

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.broker.replica.partition import Partition
from wirekafka.protocol.errors import ErrorCode

_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition
LONG_MAX = 2**63 - 1


def _volume(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding path, as Java's FileStore reports them."""
    st = os.statvfs(path)
    return min(st.f_blocks * st.f_frsize, LONG_MAX), min(st.f_bavail * st.f_frsize, LONG_MAX)


def _requested(ctx: RequestContext, request: DescribeLogDirsRequest) -> list[Partition]:
    metadata = ctx.state.metadata
    topics = request.topics
    if topics is None:
        return list(metadata.iter_partitions())
    held = []
    for t in topics:
        topic = metadata.topic(t.topic)
        if topic is None:
            continue
        held += [p for i in dict.fromkeys(t.partitions) if 0 <= i < len(topic.partitions)
                 and (p := topic.partitions[i]) is not None]
    return held


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        return DescribeLogDirsResponse(version=ctx.version, throttle_time_ms=0,
                                       error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    log_dir = os.path.abspath(ctx.state.log_dir)
    total, usable = await trio.to_thread.run_sync(_volume, log_dir) if ctx.version >= 4 else (-1, -1)
    by_topic: dict[str, list[_Partition]] = {}
    for p in _requested(ctx, request):  # after the await: the partitions as they are now
        by_topic.setdefault(p.topic, []).append(_Partition(
            partition_index=p.index, partition_size=p.size_bytes,
            offset_lag=max(p.high_watermark - p.log_end_offset, 0), is_future_key=False))
    result = _Result(error_code=ErrorCode.NONE, log_dir=log_dir,
                     topics=[_Topic(name=name, partitions=parts) for name, parts in by_topic.items()],
                     total_bytes=total, usable_bytes=usable, is_cordoned=False)
    return DescribeLogDirsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                   results=[result])
