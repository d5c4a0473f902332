"""DescribeLogDirs (key 35), v1-5 (Kafka 4 dropped v0).

- One result per directory of log.dirs (as an absolute path), in their order. An online one has
  error 0 and, in it, each requested partition it holds: its size (the bytes of its segments as they
  are now: after the cleaner swapped cleaned segments in, after retention deleted some), its
  offset lag (high watermark minus log end offset, never below 0: 0 on a leader) and
  is_future_key false. Requested partitions and topics the broker does not hold are left out,
  as Kafka leaves them out; a topic none of whose partitions is held is left out too.
  topics=null asks for every partition, internal topics included.
- Authorization: DESCRIBE on the cluster, else no results and (v3+) the top-level error code
  CLUSTER_AUTHORIZATION_FAILED.
- A directory taken offline by an I/O error (broker/replica/log_dir_failure.py): error
  KAFKA_STORAGE_ERROR, no topics, total and usable bytes -1, as Kafka's LogManager describes it.
- v3+: the top-level error code. v4+: the total and usable bytes of the
  volume holding the log directory (statvfs, read in a worker thread). v5: is_cordoned false.
Not implemented: future logs (AlterReplicaLogDirs)."""

from __future__ import annotations

import os
from pathlib import Path

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
    failures = ctx.state.log_dir_failures
    online = failures.online_dirs
    volumes = ({d: await trio.to_thread.run_sync(_volume, os.path.abspath(d)) for d in online}
               if ctx.version >= 4 else {})
    by_dir: dict[Path, dict[str, list[_Partition]]] = {d: {} for d in online}
    for p in _requested(ctx, request):  # after the awaits: the partitions as they are now
        held = by_dir.get(p.files.log_dir)
        if held is None:
            continue
        held.setdefault(p.topic, []).append(_Partition(
            partition_index=p.index, partition_size=p.size_bytes,
            offset_lag=max(p.high_watermark - p.log_end_offset, 0), is_future_key=False))
    results = []
    for d in ctx.state.log_dirs:
        if d not in by_dir:
            results.append(_Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=os.path.abspath(d), topics=[],
                                   total_bytes=-1, usable_bytes=-1, is_cordoned=False))
            continue
        total, usable = volumes.get(d, (-1, -1))
        results.append(_Result(error_code=ErrorCode.NONE, log_dir=os.path.abspath(d),
                               topics=[_Topic(name=name, partitions=parts) for name, parts in by_dir[d].items()],
                               total_bytes=total, usable_bytes=usable, is_cordoned=False))
    return DescribeLogDirsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                   results=results)
