"""Consumer groups with stock clients against a live wirekafka: partition sharing, failover after
kill -9, exact committed offsets that survive broker restarts and crashes, mixed clients in one
group, static membership and cooperative-sticky rebalancing."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition
from kafka import errors as kafka_errors

HERE = Path(__file__).resolve().parent
GROUP_CONF = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "log_level": 3,
              "auto.offset.reset": "earliest", "enable.auto.commit": False}


def _topic(bootstrap: str, name: str, partitions: int, records_per_partition: int = 0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    if records_per_partition:
        p = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
        for part in range(partitions):
            for i in range(records_per_partition):
                p.produce(name, value=b"%d-%d" % (part, i), partition=part)
        assert p.flush(10) == 0


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, **GROUP_CONF, **extra})


def _poll_until(consumers: list[Consumer], done, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        for c in consumers:
            c.poll(0.05)


class ProcConsumer:
    """group_consumer_proc.py in a subprocess, with its events collected by a reader thread."""

    def __init__(self, bootstrap: str, topic: str, group: str, seconds: float = 60, **kw: str) -> None:
        args = [sys.executable, str(HERE / "group_consumer_proc.py"), "--bootstrap", bootstrap, "--topic", topic,
                "--group", group, "--seconds", str(seconds)]
        for k, v in kw.items():
            args += [f"--{k.replace('_', '-')}", str(v)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.assignments: list[list[int]] = []
        self.records: list[tuple[int, int]] = []
        self.committed: dict[int, int] = {}
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            if "assigned" in event:
                self.assignments.append(event["assigned"])
            elif "record" in event:
                self.records.append(tuple(event["record"]))
            elif "committed" in event:
                self.committed.update({p: o for p, o in event["committed"]})

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._thread.join(5)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self._thread.join(5)


def _wait(predicate, seconds: float) -> bool:
    """Poll `predicate` every 0.1 s: True once it holds, False if `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_three_consumers_share_partitions_and_take_over_after_kill(broker, topic_name):
    """Records are produced only once the three members share the partitions, so each record is
    first consumed by its partition's final owner, and the victim is killed only once it has
    consumed all of its records: its last commit (every 5th record) then leaves a known, non-empty
    uncommitted tail, which the survivors must redeliver starting exactly at the commit."""
    partitions, per_partition, commit_every = 6, 51, 5
    _topic(broker.bootstrap, topic_name, partitions)
    group = topic_name + "-g"
    procs = [ProcConsumer(broker.bootstrap, topic_name, group, seconds=240, commit_every=commit_every)
             for _ in range(3)]
    try:
        def shared() -> bool:
            current = [p.assignments[-1] if p.assignments else None for p in procs]
            return all(current) and sorted(sum(current, [])) == list(range(partitions))

        assert _wait(shared, 60), [p.assignments for p in procs]  # all partitions, none twice
        victim, survivors = procs[0], procs[1:]
        victim_parts = set(victim.assignments[-1])
        producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        for part in range(partitions):
            for i in range(per_partition):
                producer.produce(topic_name, value=b"%d-%d" % (part, i), partition=part)
        assert producer.flush(10) == 0

        mine = per_partition * len(victim_parts)
        uncommitted = mine % commit_every  # records the victim consumed after its last commit
        assert uncommitted > 0, "the scenario needs an uncommitted tail"
        # The victim reports a commit before the record that follows it, so once all its records
        # are reported, so is its last commit; with nothing left to consume it is idle when killed.
        assert _wait(lambda: len({r for r in victim.records if r[0] in victim_parts}) == mine, 30), victim.records
        assert {r[0] for r in victim.records} == victim_parts  # the group did not rebalance meanwhile
        victim.kill()
        committed = {part: victim.committed.get(part, 0) for part in victim_parts}
        assert sum(per_partition - offset for offset in committed.values()) == uncommitted, committed

        assert _wait(lambda: {p for s in survivors if s.assignments for p in s.assignments[-1]}
                     == set(range(partitions)), 40), [s.assignments for s in survivors]

        def redelivered(part: int) -> list[int]:
            return sorted({o for s in survivors for (p, o) in s.records if p == part})

        everything = {(p, o) for p in range(partitions) for o in range(per_partition)}

        def done() -> bool:
            # Every record consumed, and the victim's tail consumed again by its partitions' new
            # owners (the victim had seen every record of its own, so the first alone would not wait).
            return ({r for p in procs for r in p.records} == everything
                    and all(redelivered(part)[-1:] == [per_partition - 1] for part in victim_parts
                            if committed[part] < per_partition))

        assert _wait(done, 40), (committed, {part: redelivered(part) for part in victim_parts})
        # Redelivery exactly from the victim's last commit: nothing before it, everything after it.
        for part in victim_parts:
            assert redelivered(part) == list(range(committed[part], per_partition)), (part, committed)
    finally:
        for p in procs:
            if p.proc.poll() is None:
                p.kill()


def test_committed_offsets_exact_visible_and_durable(broker_factory, topic_name):
    broker = broker_factory({"group.initial.rebalance.delay.ms": "0"})
    _topic(broker.bootstrap, topic_name, 3, records_per_partition=20)
    group = topic_name + "-g"
    c = _consumer(broker.bootstrap, group)
    c.subscribe([topic_name])
    _poll_until([c], lambda: len(c.assignment()) == 3)
    want = [TopicPartition(topic_name, 0, 7), TopicPartition(topic_name, 1, 13), TopicPartition(topic_name, 2, 20)]
    c.commit(offsets=want, asynchronous=False)
    c.close()

    def committed() -> dict[int, int]:
        """The group's offsets via the admin client; right after a restart the coordinator may
        answer COORDINATOR_LOAD_IN_PROGRESS while it replays __consumer_offsets (as Kafka does),
        which clients retry."""
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        deadline = time.monotonic() + 20
        while True:
            try:
                res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
                return {tp.partition: tp.offset for tp in res.topic_partitions}
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    assert committed() == {0: 7, 1: 13, 2: 20}
    assert broker.stop() == 0
    broker.start()
    assert committed() == {0: 7, 1: 13, 2: 20}
    c = _consumer(broker.bootstrap, group)
    c.commit(offsets=[TopicPartition(topic_name, 0, 9)], asynchronous=False)
    c.close()
    broker.kill()
    broker.start()
    assert committed() == {0: 9, 1: 13, 2: 20}
    kp = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        assert kp.committed(KPTopicPartition(topic_name, 1)) == 13
    finally:
        kp.close()


def test_admin_clients_see_and_alter_groups(broker, topic_name):
    from confluent_kafka import ConsumerGroupTopicPartitions

    _topic(broker.bootstrap, topic_name, 2, records_per_partition=5)
    group = topic_name + "-g"
    c = _consumer(broker.bootstrap, group)
    c.subscribe([topic_name])
    _poll_until([c], lambda: len(c.assignment()) == 2)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(10).valid}
    assert group in listed and listed[group].state.name == "STABLE"
    desc = admin.describe_consumer_groups([group])[group].result(10)
    assert desc.state.name == "STABLE" and len(desc.members) == 1
    assert sorted(tp.partition for tp in desc.members[0].assignment.topic_partitions) == [0, 1]
    fut = admin.delete_consumer_groups([group])[group]
    with pytest.raises(Exception) as info:
        fut.result(10)
    assert "NON_EMPTY_GROUP" in str(info.value)
    c.close()
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic_name, 0, 3), TopicPartition(topic_name, 1, 4)])])[group].result(10)
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    assert {tp.partition: tp.offset for tp in res.topic_partitions} == {0: 3, 1: 4}
    admin.delete_consumer_groups([group])[group].result(10)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(10).valid}
    with pytest.raises(Exception) as info:
        admin.delete_consumer_groups([group])[group].result(10)
    assert "GROUP_ID_NOT_FOUND" in str(info.value)


def test_kafka_python_admin_groups(broker, topic_name):
    from kafka.admin import KafkaAdminClient

    _topic(broker.bootstrap, topic_name, 2)
    group = topic_name + "-g"
    c = _consumer(broker.bootstrap, group)
    c.commit(offsets=[TopicPartition(topic_name, 0, 2), TopicPartition(topic_name, 1, 0)], asynchronous=False)
    c.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Empty"
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 2, 1: 0}
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
        admin.delete_groups([group])
        assert group not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()


def test_mixed_clients_split_partitions(broker, topic_name):
    _topic(broker.bootstrap, topic_name, 4)
    group = topic_name + "-g"
    # The one assignor all three support (aiokafka offers only roundrobin by default).
    conf = _consumer(broker.bootstrap, group, **{"partition.assignment.strategy": "roundrobin"})
    conf.subscribe([topic_name])
    kp = KafkaConsumer(topic_name, bootstrap_servers=broker.bootstrap, group_id=group,
                       session_timeout_ms=6000, heartbeat_interval_ms=500)
    results: dict[str, set[int]] = {}

    async def run_aiokafka(stop: asyncio.Event) -> None:
        ak = AIOKafkaConsumer(topic_name, bootstrap_servers=broker.bootstrap, group_id=group,
                              session_timeout_ms=6000, heartbeat_interval_ms=500)
        await ak.start()
        try:
            while not stop.is_set():
                await ak.getmany(timeout_ms=100)
                results["aiokafka"] = {tp.partition for tp in ak.assignment()}
                await asyncio.sleep(0)
        finally:
            await ak.stop()

    def aio_thread(stop_flag: threading.Event) -> None:
        async def main() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(run_aiokafka(stop))
            while not stop_flag.is_set():
                await asyncio.sleep(0.05)
            stop.set()
            await task
        asyncio.run(main())

    stop_flag = threading.Event()
    t = threading.Thread(target=aio_thread, args=(stop_flag,), daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            conf.poll(0.05)
            kp.poll(timeout_ms=50)
            a = {tp.partition for tp in conf.assignment()}
            b = {tp.partition for tp in kp.assignment()}
            c = results.get("aiokafka", set())
            if a and b and c and sorted(a | b | c) == [0, 1, 2, 3] and len(a) + len(b) + len(c) == 4:
                break
        assert a and b and c
        assert sorted(a | b | c) == [0, 1, 2, 3] and len(a) + len(b) + len(c) == 4
    finally:
        stop_flag.set()
        t.join(30)
        conf.close()
        kp.close()


def test_static_member_restart_keeps_partitions_without_rebalance(broker, topic_name):
    _topic(broker.bootstrap, topic_name, 4)
    group = topic_name + "-g"
    rebalances: list[list[int]] = []
    other = _consumer(broker.bootstrap, group, **{"group.instance.id": "other"})
    other.subscribe([topic_name], on_assign=lambda c, ps: rebalances.append(sorted(p.partition for p in ps)))
    static = _consumer(broker.bootstrap, group, **{"group.instance.id": "static-1"})
    static.subscribe([topic_name])
    _poll_until([other, static], lambda: len(static.assignment()) + len(other.assignment()) == 4
                and static.assignment() and other.assignment())
    before = sorted(tp.partition for tp in static.assignment())
    other_rebalances = len(rebalances)
    static.close()  # a static member's close does not leave the group
    again = _consumer(broker.bootstrap, group, **{"group.instance.id": "static-1"})
    got: list[list[int]] = []
    again.subscribe([topic_name], on_assign=lambda c, ps: got.append(sorted(p.partition for p in ps)))
    _poll_until([other, again], lambda: bool(got), seconds=20)
    for _ in range(20):
        other.poll(0.1)
        again.poll(0.01)
    assert got and got[-1] == before
    assert len(rebalances) == other_rebalances  # the other member saw no rebalance
    again.close()
    other.close()


def test_cooperative_sticky_revokes_only_what_moves(broker, topic_name):
    _topic(broker.bootstrap, topic_name, 6)
    group = topic_name + "-g"
    extra = {"partition.assignment.strategy": "cooperative-sticky"}
    events: dict[str, list[tuple[str, list[int]]]] = {"a": [], "b": []}

    def track(name: str):
        return dict(
            on_assign=lambda c, ps: events[name].append(("assign", sorted(p.partition for p in ps))),
            on_revoke=lambda c, ps: events[name].append(("revoke", sorted(p.partition for p in ps))),
        )

    a = _consumer(broker.bootstrap, group, **extra)
    a.subscribe([topic_name], **track("a"))
    _poll_until([a], lambda: len(a.assignment()) == 6)
    b = _consumer(broker.bootstrap, group, **extra)
    b.subscribe([topic_name], **track("b"))
    _poll_until([a, b], lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3, seconds=40)
    assert len(a.assignment()) == 3 and len(b.assignment()) == 3
    revoked = [set(ps) for kind, ps in events["a"] if kind == "revoke" and ps]
    kept = {tp.partition for tp in a.assignment()}
    assert revoked and all(not (r & kept) for r in revoked)  # only partitions that moved were revoked
    assert set().union(*revoked) == {tp.partition for tp in b.assignment()}
    a.close()
    b.close()


def test_standalone_commit_rejected_while_group_active(broker, topic_name):
    _topic(broker.bootstrap, topic_name, 1)
    group = topic_name + "-g"
    member = _consumer(broker.bootstrap, group)
    member.subscribe([topic_name])
    _poll_until([member], lambda: len(member.assignment()) == 1)
    standalone = _consumer(broker.bootstrap, group)
    with pytest.raises(Exception) as info:
        standalone.commit(offsets=[TopicPartition(topic_name, 0, 1)], asynchronous=False)
    assert info.value.args[0].code() in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError._NO_OFFSET) or \
        "UNKNOWN_MEMBER_ID" in str(info.value)
    standalone.close()
    member.close()


def test_group_max_size_refuses_a_third_consumer(broker_factory):
    """group.max.size=2: with two members in the group, a third consumer's JoinGroup is refused
    with GROUP_MAX_SIZE_REACHED, which both clients treat as fatal (kafka-python raises it from
    poll, librdkafka reports it as a consumer error); the two members keep their partitions."""
    broker = broker_factory({"group.max.size": "2", "group.initial.rebalance.delay.ms": "0"})
    topic, group = "max-size", "max-size-group"
    _topic(broker.bootstrap, topic, 2)
    members = [_consumer(broker.bootstrap, group) for _ in range(2)]
    extra = _consumer(broker.bootstrap, group)
    try:
        for c in members:
            c.subscribe([topic])
        _poll_until(members, lambda: all(len(c.assignment()) == 1 for c in members), 20)
        assignments = [c.assignment() for c in members]
        assert sorted(tp.partition for a in assignments for tp in a) == [0, 1]

        refused = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                session_timeout_ms=6000, request_timeout_ms=10000)
        try:
            with pytest.raises(kafka_errors.GroupMaxSizeReachedError):
                refused.poll(timeout_ms=5000)
        finally:
            refused.close(autocommit=False)

        extra.subscribe([topic])
        errors: list[KafkaError] = []
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            msg = extra.poll(0.1)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
        assert [e.code() for e in errors] == [KafkaError.GROUP_MAX_SIZE_REACHED]
        for c in members:
            c.poll(0)
        assert [c.assignment() for c in members] == assignments
    finally:
        extra.close()
        for c in members:
            c.close()
