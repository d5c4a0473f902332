"""The group coordinator's state machine and error codes, on a BrokerState in a temp dir, with
trio's MockClock so session and rebalance timeouts pass instantly."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from wirekafka.broker.coordinator.group_model import GroupState, partition_for
from wirekafka.broker.state import BrokerState
from wirekafka.config.loader import build_config
from wirekafka.jvm import java_string_hash
from wirekafka.protocol.errors import ErrorCode, KafkaApiError

PROTOCOLS = [("range", b"meta-r"), ("roundrobin", b"meta-rr")]


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs maps MIN_VALUE to 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert java_string_hash("world!") < 0  # a negative hash: Math.abs, not a bit mask
    assert partition_for("world!", 50) == abs(java_string_hash("world!")) % 50


def _run(tmp_path: Path, body, **overrides: str) -> None:
    props = {"log.dirs": str(tmp_path / "data"), "group.initial.rebalance.delay.ms": "0",
             "offsets.topic.num.partitions": "3", **overrides}
    state = BrokerState(build_config(props))
    state.load()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(state.groups.run_timers)
            await state.groups.ensure_offsets_topic()  # what FindCoordinator does first
            await body(state, nursery)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def _join(state, group="g", member="", instance=None, session=10_000, protocols=PROTOCOLS):
    return await state.groups.join(group, member, instance, "client", "/127.0.0.1", session, session,
                                   "consumer", protocols, require_known_member_id=True)


async def _join_new(state, group="g", instance=None, session=10_000):
    first = await _join(state, group, "", instance, session)
    if first.error == ErrorCode.MEMBER_ID_REQUIRED:
        return await _join(state, group, first.member_id, instance, session)
    return first


def test_member_id_required_then_single_member_group(tmp_path: Path) -> None:
    async def body(state, nursery):
        first = await _join(state)
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("client-")
        joined = await _join(state, member=first.member_id)
        assert joined.error == ErrorCode.NONE and joined.generation == 1 and joined.leader == first.member_id
        assert joined.protocol == "range" and joined.members == [(first.member_id, None, b"meta-r")]
        code, assignment, ptype, pname = await state.groups.sync("g", 1, first.member_id, None, "consumer", "range",
                                                                 {first.member_id: b"A"})
        assert (code, assignment, ptype, pname) == (ErrorCode.NONE, b"A", "consumer", "range")
        assert state.groups.groups["g"].state == GroupState.STABLE

    _run(tmp_path, body)


def test_error_codes_where_kafka_returns_them(tmp_path: Path) -> None:
    async def body(state, nursery):
        g = state.groups
        bad = await _join(state, session=1000)
        assert bad.error == ErrorCode.INVALID_SESSION_TIMEOUT
        a = await _join_new(state)
        await g.sync("g", a.generation, a.member_id, None, None, None, {a.member_id: b"x"})
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("g", a.generation, "nobody", None)
        assert info.value.code == ErrorCode.UNKNOWN_MEMBER_ID
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("g", a.generation + 5, a.member_id, None)
        assert info.value.code == ErrorCode.ILLEGAL_GENERATION
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("no-such-group", 1, a.member_id, None)
        assert info.value.code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await _join(state, member="unknown-member")).error == ErrorCode.UNKNOWN_MEMBER_ID
        other = await _join(state, protocols=[("sticky", b"")])
        assert other.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        # A second member joining puts the group into PreparingRebalance: the first one's
        # heartbeat says REBALANCE_IN_PROGRESS until it rejoins.
        pending = await _join(state)
        nursery.start_soon(_join, state, "g", pending.member_id)
        await trio.sleep(0.01)
        assert g.groups["g"].state == GroupState.PREPARING_REBALANCE
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("g", a.generation, a.member_id, None)
        assert info.value.code == ErrorCode.REBALANCE_IN_PROGRESS
        with pytest.raises(KafkaApiError) as info:
            g.delete_group("g")
        assert info.value.code == ErrorCode.NON_EMPTY_GROUP
        with pytest.raises(KafkaApiError) as info:
            g.delete_group("never-existed")
        assert info.value.code == ErrorCode.GROUP_ID_NOT_FOUND
        with pytest.raises(KafkaApiError) as info:
            g.offsets.validate_commit("g", a.generation + 1, a.member_id, None, ErrorCode.ILLEGAL_GENERATION)
        assert info.value.code == ErrorCode.ILLEGAL_GENERATION
        with pytest.raises(KafkaApiError) as info:
            g.offsets.validate_commit("fresh-group", 3, "m", None, ErrorCode.GROUP_ID_NOT_FOUND)
        assert info.value.code == ErrorCode.GROUP_ID_NOT_FOUND
        assert g.offsets.validate_commit("standalone", -1, "", None, ErrorCode.ILLEGAL_GENERATION).state == GroupState.EMPTY

    _run(tmp_path, body)


def test_static_member_fencing_and_rejoin(tmp_path: Path) -> None:
    async def body(state, nursery):
        g = state.groups
        a = await _join_new(state, instance="i-1")
        await g.sync("g", a.generation, a.member_id, "i-1", None, None, {a.member_id: b"P"})
        again = await _join(state, instance="i-1")  # restart: a new member id, same assignment
        assert again.error == ErrorCode.NONE and again.member_id != a.member_id
        assert again.generation == a.generation  # no rebalance
        code, assignment, _, _ = await g.sync("g", again.generation, again.member_id, "i-1", None, None, {})
        assert assignment == b"P"
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("g", again.generation, a.member_id, "i-1")  # the old instance is fenced
        assert info.value.code == ErrorCode.FENCED_INSTANCE_ID
        with pytest.raises(KafkaApiError) as info:
            g.offsets.validate_commit("g", again.generation, a.member_id, "i-1", ErrorCode.ILLEGAL_GENERATION)
        assert info.value.code == ErrorCode.FENCED_INSTANCE_ID
        for call in (lambda: g.heartbeat("g", again.generation, again.member_id, "i-unknown"),
                     lambda: g.offsets.validate_commit("g", again.generation, again.member_id, "i-unknown",
                                               ErrorCode.ILLEGAL_GENERATION)):
            with pytest.raises(KafkaApiError) as info:
                call()
            assert info.value.code == ErrorCode.UNKNOWN_MEMBER_ID  # Kafka's validateMember

    _run(tmp_path, body)


def test_session_timeout_evicts_and_rebalances(tmp_path: Path) -> None:
    async def body(state, nursery):
        g = state.groups
        a = await _join_new(state, session=6000)
        await g.sync("g", a.generation, a.member_id, None, None, None, {})
        await trio.sleep(7)  # no heartbeats
        assert a.member_id not in g.groups["g"].members
        assert g.groups["g"].state == GroupState.EMPTY and g.groups["g"].generation == a.generation + 1

    _run(tmp_path, body)


def test_offsets_survive_a_reload(tmp_path: Path) -> None:
    from wirekafka.broker.coordinator import group_records as gr

    async def body(state, nursery):
        await state.metadata.create_topic("t", 2)
        grp = state.groups.offsets.validate_commit("c", -1, "", None, ErrorCode.ILLEGAL_GENERATION)
        now = state.now_ms()  # a 1970 stamp would expire at a reload's first retention check
        await state.groups.offsets.commit(grp, {("t", 0): gr.OffsetValue(42, 0, "meta", now),
                                        ("t", 1): gr.OffsetValue(7, -1, "", now)})
        await state.groups.offsets.commit(grp, {("t", 0): gr.OffsetValue(43, 0, "", now)})

    _run(tmp_path, body)

    async def reload(state, nursery):
        await state.groups.load()
        committed = state.groups.offsets.committed("c")
        assert committed[("t", 0)].offset == 43 and committed[("t", 1)].offset == 7

    _run(tmp_path, reload)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_the_offsets_topic_codec_compresses_every_coordinator_batch(tmp_path: Path, codec: int) -> None:
    """offsets.topic.compression.codec (none, gzip, snappy, lz4, zstd): each commit and group
    record batch in __consumer_offsets is written with it, and read back on a reload."""
    from wirekafka.broker.coordinator import group_records as gr

    async def body(state, nursery):
        await state.metadata.create_topic("t", 2)
        grp = state.groups.offsets.validate_commit("c", -1, "", None, ErrorCode.ILLEGAL_GENERATION)
        now = state.now_ms()  # a 1970 stamp would expire at a reload's first retention check
        await state.groups.offsets.commit(grp, {("t", 0): gr.OffsetValue(42, 0, "meta", now),
                                        ("t", 1): gr.OffsetValue(7, -1, "", now)})
        joined = await _join_new(state)  # the group's record, written once its leader syncs
        assert (await state.groups.sync("g", 1, joined.member_id, None, "consumer", "range",
                                        {joined.member_id: b"a"}))[0] == ErrorCode.NONE
        partition = state.groups.offsets_partition("c")
        codecs = {header.compression for header, _ in partition.files.iter_batches(partition.log_start_offset)}
        partition = state.groups.offsets_partition("g")
        codecs |= {header.compression for header, _ in partition.files.iter_batches(partition.log_start_offset)}
        assert codecs == {codec}

    _run(tmp_path, body, **{"offsets.topic.compression.codec": str(codec)})

    async def reload(state, nursery):
        await state.groups.load()
        committed = state.groups.offsets.committed("c")
        assert (committed[("t", 0)].offset, committed[("t", 1)].offset) == (42, 7)

    _run(tmp_path, reload)


def test_an_unknown_offsets_topic_codec_stops_startup() -> None:
    from wirekafka.startup_errors import ConfigError

    with pytest.raises(ConfigError, match="^Unknown compression type id: 5$"):
        build_config({"offsets.topic.compression.codec": "5"})


def test_offsets_committed_with_a_retention_expire_at_their_own_timestamp(tmp_path: Path) -> None:
    """OffsetCommit v2-4's retention_time_ms: such an offset expires at commit time + retention,
    whatever offsets.retention.minutes says (Kafka's OffsetExpirationConditionImpl)."""
    from wirekafka.broker.coordinator import group_records as gr

    async def body(state, nursery):
        await state.metadata.create_topic("t", 3)
        grp = state.groups.offsets.validate_commit("c", -1, "", None, ErrorCode.ILLEGAL_GENERATION)
        now = state.now_ms()
        await state.groups.offsets.commit(grp, {("t", 0): gr.OffsetValue(1, -1, "", now, now),
                                        ("t", 1): gr.OffsetValue(2, -1, "", now, now + 3_600_000),
                                        ("t", 2): gr.OffsetValue(3, -1, "", now)})
        state.groups.offsets.expire_offsets()
        assert set(state.groups.offsets.committed("c")) == {("t", 1), ("t", 2)}

    _run(tmp_path, body)


def test_record_schemas_round_trip() -> None:
    from wirekafka.broker.coordinator import group_records as gr

    key = gr.encode_offset_key(gr.OffsetKey("grp", "topic", 3))
    assert key[:2] == b"\x00\x01" and gr.decode_key(key) == gr.OffsetKey("grp", "topic", 3)
    value = gr.encode_offset_value(gr.OffsetValue(99, 4, "md", 12345))
    assert value[:2] == b"\x00\x03" and gr.decode_offset_value(value) == gr.OffsetValue(99, 4, "md", 12345)
    expiring = gr.encode_offset_value(gr.OffsetValue(99, -1, "md", 12345, 99999))  # Kafka's v1
    assert expiring == b"\x00\x01" + (99).to_bytes(8, "big") + b"\x00\x02md" + (12345).to_bytes(8, "big") \
        + (99999).to_bytes(8, "big")
    assert gr.decode_offset_value(expiring) == gr.OffsetValue(99, -1, "md", 12345, 99999)
    gv = gr.GroupValue("consumer", 5, "range", "m1", 1000, [
        gr.MemberValue("m1", "inst", "cid", "/127.0.0.1", 30000, 10000, b"sub", b"asg")])
    assert gr.decode_group_value(gr.encode_group_value(gv)) == gv
    assert gr.decode_key(gr.encode_group_key(gr.GroupKey("grp"))) == gr.GroupKey("grp")


def test_offsets_reload_from_a_cleaned_log(tmp_path: Path) -> None:
    """__consumer_offsets after the cleaner: superseded commits gone, tombstones (DeleteOffsets,
    DeleteGroups) kept with a delete horizon and then gone, transactional commits (one committed,
    one aborted) with their markers, batches emptied by the cleaner: a reload rebuilds exactly the
    groups and offsets the coordinator had."""
    from wirekafka.broker.coordinator import group_records as gr
    from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC
    from wirekafka.protocol import records
    from wirekafka.storage import batch_filter
    from testsupport.cleaning import clean_partition

    now = [1_700_000_000.0]
    props = {"log.dirs": str(tmp_path / "data"), "group.initial.rebalance.delay.ms": "0",
             "offsets.topic.num.partitions": "2", "offsets.topic.segment.bytes": "4096",
             "log.cleaner.min.cleanable.ratio": "0.01"}
    expected: dict[str, dict] = {}
    seen = {"horizon": False, "empty": False, "removed": False}

    def clean_all(state) -> None:
        for p in state.metadata.topic(OFFSETS_TOPIC).partitions:
            cleanable = p.cleaning.cleanable_range(state.cleaner.checkpoints.get((p.topic, p.index)), state.now_ms())
            if not cleanable.cleanable_bytes:
                continue
            state.cleaner.checkpoints[(p.topic, p.index)] = clean_partition(
                p, state.now_ms(), state.cleaner.checkpoints.get((p.topic, p.index)), 10**6)
            for header, _ in p.files.iter_batches(0):
                seen["horizon"] |= batch_filter.has_delete_horizon(header)
                seen["empty"] |= header.records_count == 0

    def tombstones(state) -> int:
        return sum(1 for p in state.metadata.topic(OFFSETS_TOPIC).partitions for header, read in p.files.iter_batches(0)
                   if not header.is_control for r in records.iter_records(read()) if r.value is None)

    async def commit_all(state, value_base: int) -> None:
        for r in range(20):
            for gid in ("a", "b", "c", "d"):
                grp = state.groups.offsets.validate_commit(gid, -1, "", None, ErrorCode.ILLEGAL_GENERATION)
                await state.groups.offsets.commit(grp, {("t", i): gr.OffsetValue(value_base + 100 * r + i, -1, "",
                                                                         state.now_ms()) for i in range(6)})
                now[0] += 1

    async def body(state, nursery):
        g = state.groups
        await state.metadata.create_topic("t", 6)
        await commit_all(state, 0)
        g.offsets.delete_offsets("a", [("t", 1), ("t", 2)])
        g.delete_group("b")
        for pid, gid, commit in ((900, "c", True), (901, "d", False)):
            grp = g.offsets.validate_txn_commit(gid, -1, "", None)
            await g.offsets.txn_commit(grp, pid, 0, {("t", 0): gr.OffsetValue(5000 + pid, -1, "", state.now_ms())})
            assert await state.write_txn_marker(OFFSETS_TOPIC, g.partition_of(gid), pid, 0, 0, commit) == \
                ErrorCode.NONE
        for p in state.metadata.topic(OFFSETS_TOPIC).partitions:
            p._log.roll()  # everything written so far becomes cleanable
        clean_all(state)  # the tombstones stay, with a delete horizon
        assert tombstones(state) == 3 + 6  # a's two offsets; b's six offsets and its group
        now[0] += 2 * 86_400  # past delete.retention.ms
        late = ("a", "e", "f")  # new dirty data on every partition: a log is cleaned only then, as in Kafka
        assert {g.partition_of(gid) for gid in late} == {0, 1}
        for gid in late:
            grp = g.offsets.validate_commit(gid, -1, "", None, ErrorCode.ILLEGAL_GENERATION)
            await g.offsets.commit(grp, {("t", 5): gr.OffsetValue(77, -1, "", state.now_ms())})
        for p in state.metadata.topic(OFFSETS_TOPIC).partitions:
            p._log.roll()
        clean_all(state)  # now they go
        seen["removed"] = tombstones(state) == 0
        expected.update({gid: dict(grp.offsets) for gid, grp in g.groups.items()})

    def run(body) -> None:
        state = BrokerState(build_config(props), clock=lambda: now[0])
        state.load()

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                await state.groups.ensure_offsets_topic()
                await body(state, nursery)
                nursery.cancel_scope.cancel()

        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        state.shutdown()

    run(body)
    assert seen == {"horizon": True, "empty": True, "removed": True}
    assert set(expected) == {"a", "c", "d", "e", "f"}
    assert expected["c"][("t", 0)].offset == 5900 and expected["d"][("t", 0)].offset == 1900
    assert set(expected["a"]) == {("t", 0), ("t", 3), ("t", 4), ("t", 5)}

    async def reload(state, nursery):
        await state.groups.load()
        assert {gid: dict(grp.offsets) for gid, grp in state.groups.groups.items()} == expected

    run(reload)


def test_an_empty_group_without_offsets_is_deleted_with_tombstones(tmp_path: Path) -> None:
    """Kafka 4's cleanupGroupMetadata: an Empty group whose offsets all expired, or that never had
    any, is deleted and its metadata tombstoned (with the offsets' tombstones, the cleaner can then
    bound __consumer_offsets); a group with live offsets, or a commit still being written, stays."""
    from wirekafka.broker.coordinator import group_records as gr
    from wirekafka.broker.coordinator.groups import OFFSETS_TOPIC
    from wirekafka.protocol import records

    async def body(state, nursery):
        g = state.groups
        await state.metadata.create_topic("t", 2)
        old = state.now_ms() - 2 * 60_000  # older than offsets.retention.minutes=1
        for gid, stamp in (("expired", old), ("kept", state.now_ms())):
            grp = g.offsets.validate_commit(gid, -1, "", None, ErrorCode.ILLEGAL_GENERATION)
            await g.offsets.commit(grp, {("t", 0): gr.OffsetValue(1, -1, "", stamp), ("t", 1): gr.OffsetValue(2, -1, "", stamp)})
        a = await _join_new(state, group="left")
        await g.sync("left", a.generation, a.member_id, None, None, None, {a.member_id: b"x"})
        g.leave("left", [(a.member_id, None)])
        assert g.groups["left"].state == GroupState.EMPTY
        in_flight = g.offsets.validate_commit("writing", -1, "", None, ErrorCode.ILLEGAL_GENERATION)
        in_flight.offset_writes += 1  # as while its commit waits for the write
        g.offsets.expire_offsets()
        assert set(g.groups) == {"kept", "writing"}
        written = [(gr.decode_key(r.key), r.value) for p in state.metadata.topic(OFFSETS_TOPIC).partitions
                   for h, read in p.files.iter_batches(0) for r in records.iter_records(read())]
        tombstoned = {k for k, v in written if v is None}
        assert tombstoned == {gr.OffsetKey("expired", "t", 0), gr.OffsetKey("expired", "t", 1),
                              gr.GroupKey("expired"), gr.GroupKey("left")}

    _run(tmp_path, body, **{"offsets.retention.minutes": "1"})

    async def reload(state, nursery):
        await state.groups.load()
        assert set(state.groups.groups) == {"kept"}

    _run(tmp_path, reload)


# ---- group.max.size (Kafka's acceptJoiningMember) --------------------------------------------------
async def _form(state, nursery, count: int, group: str = "g") -> list[str]:
    """A Stable group of `count` members (two-step joins, then SyncGroup); their ids, leader first."""
    g = state.groups
    ids = [(await _join(state, group)).member_id for _ in range(count)]
    joined: dict[str, object] = {}

    async def rejoin(member_id: str) -> None:
        joined[member_id] = await _join(state, group, member_id)

    for member_id in ids:
        nursery.start_soon(rejoin, member_id)
    await trio.testing.wait_all_tasks_blocked()
    leader = g.groups[group].leader
    generation = g.groups[group].generation
    assert len(joined) == count and g.groups[group].state == GroupState.COMPLETING_REBALANCE
    await g.sync(group, generation, leader, None, None, None, {m: b"a" for m in ids})
    for member_id in ids:
        if member_id != leader:
            await g.sync(group, generation, member_id, None, None, None, {})
    assert g.groups[group].state == GroupState.STABLE
    return [leader] + [m for m in ids if m != leader]


def _refused(result) -> bool:
    return result.error == ErrorCode.GROUP_MAX_SIZE_REACHED and result.member_id == ""


def test_group_max_size_must_be_at_least_one(tmp_path: Path) -> None:
    from wirekafka.startup_errors import ConfigError

    with pytest.raises(ConfigError, match=r"^Invalid value 0 for configuration group.max.size: "
                                          r"Value must be at least 1$"):
        build_config({"log.dirs": str(tmp_path), "group.max.size": "0"})


def test_an_empty_group_accepts_a_member_whatever_its_size(tmp_path: Path) -> None:
    async def body(state, nursery):
        g = state.groups
        (a,) = await _form(state, nursery, 1)
        g.leave("g", [(a, None)])
        assert g.groups["g"].state == GroupState.EMPTY
        assert (await _join_new(state)).error == ErrorCode.NONE

    _run(tmp_path, body, **{"group.max.size": "1"})


def test_a_full_stable_group_refuses_every_joiner_but_its_members(tmp_path: Path) -> None:
    """Stable (and CompletingRebalance): the group's size counts. The empty member id is never a
    member, so a new member, the first step of a two-step join and a static member coming back
    with an empty id are all refused; an existing member still gets back in."""
    async def body(state, nursery):
        g = state.groups
        leader, follower = await _form(state, nursery, 2)
        assert _refused(await _join(state))
        assert _refused(await _join(state, instance="static-1"))
        assert _refused(await _join(state, member="not-a-member"))
        again = await _join(state, member=follower)
        assert again.error == ErrorCode.NONE and again.member_id == follower
        assert set(g.groups["g"].members) == {leader, follower} and g.groups["g"].state == GroupState.STABLE

    _run(tmp_path, body, **{"group.max.size": "2"})


async def _join_in_background(state, nursery, member_id: str, results: dict) -> None:
    """Send a JoinGroup that waits for the rebalance; its answer lands in results[member_id]."""
    async def join() -> None:
        results[member_id] = await _join(state, member=member_id)

    nursery.start_soon(join)
    await trio.testing.wait_all_tasks_blocked()


def test_while_rebalancing_members_awaiting_their_join_count(tmp_path: Path) -> None:
    """PreparingRebalance: an id from MEMBER_ID_REQUIRED comes back once max.size members await
    their join: refused and forgotten. Kafka does not check the join phase after a refusal, so
    the members left all joined still wait for the rebalance deadline (10 s here)."""
    async def body(state, nursery):
        g = state.groups
        (a,) = await _form(state, nursery, 1)
        b = (await _join(state)).member_id
        d = (await _join(state)).member_id
        started = trio.current_time()
        results: dict = {}
        await _join_in_background(state, nursery, b, results)
        await _join_in_background(state, nursery, a, results)
        grp = g.groups["g"]
        assert grp.state == GroupState.PREPARING_REBALANCE and grp.awaiting_join() == 2 and d in grp.pending
        assert _refused(await _join(state, member=d))
        assert d not in grp.pending and not results
        await trio.sleep(5)
        assert grp.state == GroupState.PREPARING_REBALANCE and not results
        await trio.sleep(6)
        assert {m: (r.error, r.generation) for m, r in results.items()} == {a: (ErrorCode.NONE, 2),
                                                                          b: (ErrorCode.NONE, 2)}
        assert trio.current_time() - started >= 10 and set(grp.members) == {a, b}

    _run(tmp_path, body, **{"group.max.size": "2"})


def test_an_existing_member_refused_while_rebalancing_is_removed(tmp_path: Path) -> None:
    """PreparingRebalance with max.size members awaiting: a new member got in while fewer were
    (the group's size does not count then), so the last existing member to rejoin is refused
    and removed; one already awaiting would be accepted. The join completes at the deadline."""
    async def body(state, nursery):
        g = state.groups
        leader, follower = await _form(state, nursery, 2)
        results: dict = {}
        await _join_in_background(state, nursery, leader, results)  # PreparingRebalance, 1 awaiting
        newcomer = await _join(state)
        assert newcomer.error == ErrorCode.MEMBER_ID_REQUIRED
        await _join_in_background(state, nursery, newcomer.member_id, results)
        grp = g.groups["g"]
        assert len(grp.members) == 3 and grp.awaiting_join() == 2
        assert grp.accepts_joining_member(leader, 2) and not grp.accepts_joining_member(follower, 2)
        assert _refused(await _join(state, member=follower))
        assert set(grp.members) == {leader, newcomer.member_id}
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("g", 1, follower, None)
        assert info.value.code == ErrorCode.UNKNOWN_MEMBER_ID
        await trio.sleep(11)
        assert {m: (r.error, r.generation) for m, r in results.items()} == {
            leader: (ErrorCode.NONE, 2), newcomer.member_id: (ErrorCode.NONE, 2)}
        assert sorted(m for m, _, _ in results[leader].members) == sorted([leader, newcomer.member_id])

    _run(tmp_path, body, **{"group.max.size": "2"})


async def _load_group_partition(state, group: str = "g") -> None:
    """Replay only the group's partition of __consumer_offsets: each replay waits on a worker
    thread, and meanwhile MockClock jumps ahead, so replaying more partitions after this one
    would let loaded members' session and rebalance deadlines pass."""
    await state.groups.load_partition(state.groups.offsets_partition(group))


def test_a_group_loaded_over_capacity_rebalances(tmp_path: Path) -> None:
    """group.max.size lowered below a group's size: on load the group rebalances at once (its
    members' heartbeats say REBALANCE_IN_PROGRESS, so they can commit and rejoin); the first
    max.size members to rejoin get back in, the others are refused and removed."""
    formed: list[str] = []

    async def form(state, nursery):
        formed.extend(await _form(state, nursery, 3))

    _run(tmp_path, form)

    async def reload(state, nursery):
        g = state.groups
        await _load_group_partition(state)
        grp = g.groups["g"]
        assert grp.state == GroupState.PREPARING_REBALANCE and set(grp.members) == set(formed)
        with pytest.raises(KafkaApiError) as info:
            g.heartbeat("g", 1, formed[0], None)
        assert info.value.code == ErrorCode.REBALANCE_IN_PROGRESS
        results: dict = {}
        await _join_in_background(state, nursery, formed[0], results)
        await _join_in_background(state, nursery, formed[1], results)
        assert _refused(await _join(state, member=formed[2]))
        assert _refused(await _join(state))
        await trio.sleep(11)
        assert {m: (r.error, r.generation) for m, r in results.items()} == {
            formed[0]: (ErrorCode.NONE, 2), formed[1]: (ErrorCode.NONE, 2)}
        assert set(grp.members) == set(formed[:2]) and grp.state == GroupState.COMPLETING_REBALANCE

    _run(tmp_path, reload, **{"group.max.size": "2"})


def test_a_group_loaded_within_capacity_stays_stable(tmp_path: Path) -> None:
    async def form(state, nursery):
        await _form(state, nursery, 2)

    _run(tmp_path, form)

    async def reload(state, nursery):
        await _load_group_partition(state)
        assert state.groups.groups["g"].state == GroupState.STABLE

    _run(tmp_path, reload, **{"group.max.size": "2"})
