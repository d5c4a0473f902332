"""Partition reassignments in ZooKeeper mode (KIP-455): started or cancelled by whichever broker
is asked (AlterPartitionReassignments) as the topic znode's adding_replicas / removing_replicas,
listed from the cluster view (ListPartitionReassignments), and on the controller the legacy
/admin/reassign_partitions znode followed and finished moves written back to the topic znode.

The decisions are controller.py's (`plan_reassignments`, `plan_legacy_reassignments`,
`completed_reassignments`); this class does their writes, each conditional on the topic znode's
version (and, for the controller's, on the controller epoch's), retried or left to the next
reconcile when it lost a race."""

from __future__ import annotations

import logging

from kazoo.exceptions import BadVersionError, NoNodeError

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.cluster_view import ClusterView
from wirekafka.broker.metadata.zk.controller import (ClusterSnapshot, ReassignmentDone, plan_legacy_reassignments,
                                                     plan_reassignments)
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class Reassignments:
    def __init__(self, zk: ZkSession, view: ClusterView) -> None:
        self.zk = zk
        self.view = view

    # ---- AlterPartitionReassignments, ListPartitionReassignments (any broker) ------------------------
    async def alter(self, changes: list[tuple[str, int, list[int] | None]]
                    ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """Start (target replicas) or cancel (None) reassignments, as the topic znode's
        adding_replicas / removing_replicas (KIP-455): the controller completes them once the new
        replicas are in sync. Conditional on the topic znode's version; retried on a race."""
        answers: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
        for topic, index, target in changes:
            by_topic.setdefault(topic, []).append((index, target))
        for topic, items in by_topic.items():
            result: dict[int, tuple[ErrorCode, str | None]] = {}
            for _attempt in range(5):
                snapshot = await self.zk.call(io.read_snapshot, self.zk.client, None, (), None, {topic}.intersection)
                view = snapshot.topics.get(topic)
                result, assignment, adding, removing = plan_reassignments(view, items, set(snapshot.brokers))
                if assignment is None or view is None:
                    break
                await self._yield_legacy_entries(snapshot, {(topic, i) for i, (e, _) in result.items()
                                                            if e == ErrorCode.NONE})
                try:
                    await self.zk.call(io.set_assignment, self.zk.client, topic, view.topic_id,
                                       assignment, adding, removing, view.version)
                    break
                except BadVersionError:
                    continue
            for index, answer in result.items():
                answers[(topic, index)] = answer
        self.zk.mark_changed()
        return answers

    def in_progress(self, wanted: list[tuple[str, int]] | None
                    ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """(topic, partition, replicas, adding, removing) of the reassignments in progress."""
        out = []
        for name, view in sorted(self.view.snapshot.topics.items()):
            for index in sorted(set(view.adding) | set(view.removing)):
                if wanted is None or (name, index) in wanted:
                    out.append((name, index, view.assignment[index], view.adding.get(index, ()),
                                view.removing.get(index, ())))
        return out

    async def _yield_legacy_entries(self, snapshot: ClusterSnapshot, partitions: set[tuple[str, int]]) -> None:
        """The latest request wins, as in Kafka: partitions the API reassigns leave
        /admin/reassign_partitions, before the API's write, so that the controller cannot start
        the znode's older target over it."""
        if snapshot.legacy_reassignments is None or not partitions & set(snapshot.legacy_reassignments[0]):
            return
        for _attempt in range(5):
            try:
                await self.zk.call(io.drop_legacy_reassignments, self.zk.client, partitions, None)
                return
            except BadVersionError:  # the controller changed it meanwhile: read it again
                continue

    # ---- the controller's side ------------------------------------------------------------------------
    async def follow_legacy(self, snapshot: ClusterSnapshot) -> None:
        """/admin/reassign_partitions: start its moves on the topic znodes (KIP-455's fields,
        completed like the API's) and take finished or impossible entries out of it."""
        plan = plan_legacy_reassignments(snapshot)
        by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
        for (topic, index), target in plan.start.items():
            by_topic.setdefault(topic, []).append((index, list(target)))
        for topic, items in by_topic.items():
            view = snapshot.topics[topic]
            _checked, assignment, adding, removing = plan_reassignments(view, items, set(snapshot.brokers),
                                                                        require_live=False)
            if assignment is None:
                continue
            try:
                await self.zk.call(io.set_assignment, self.zk.client, topic, view.topic_id, assignment, adding,
                                   removing, view.version)
            except (BadVersionError, NoNodeError):
                self.zk.mark_changed()
                continue
            log.info("controller: reassignment of %s partitions %s started from %s", topic,
                     sorted(i for i, _ in items), zl.REASSIGN_PARTITIONS)
        for (topic, index), why in plan.drop.items():
            log.info("controller: %s-%d leaves %s: %s", topic, index, zl.REASSIGN_PARTITIONS, why)
        if plan.drop:
            await self._drop_legacy_reassignments(set(plan.drop), snapshot.controller_epoch_version)

    async def _drop_legacy_reassignments(self, partitions: set[tuple[str, int]], epoch_version: int | None) -> None:
        try:
            await self.zk.call(io.drop_legacy_reassignments, self.zk.client, partitions, epoch_version)
        except (BadVersionError, NoNodeError):
            self.zk.mark_changed()

    async def finish(self, snapshot: ClusterSnapshot, done: ReassignmentDone) -> None:
        """A completed move (its new state written): the topic znode keeps the target replicas
        and forgets the partition's adding and removing replicas."""
        view = snapshot.topics[done.state.topic]
        index = done.state.partition
        assignment = {p: list(done.replicas if p == index else r) for p, r in view.assignment.items()}
        adding = {p: list(r) for p, r in view.adding.items() if p != index}
        removing = {p: list(r) for p, r in view.removing.items() if p != index}
        try:
            await self.zk.call(io.set_assignment, self.zk.client, done.state.topic, view.topic_id, assignment,
                               adding, removing, view.version)
            log.info("controller: reassignment of %s-%d done: replicas %s", done.state.topic, index,
                     list(done.replicas))
        except (BadVersionError, NoNodeError):
            self.zk.mark_changed()
