"""The nemesis suite's pure parts (faults/): a seed gives one schedule (combined faults on two
nodes, full disks), the checkers find a lost, a moved, a reused and a duplicated acknowledgement,
replicas that differ below the high watermark, and a consumer group's committed offsets going
back, records skipped and garbage received; a full disk is a tmpfs of its own, filled and freed."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from faults import disks
from faults.checkers import Ack, Verdict, committed_went_back, judge, judge_copy, judge_group
from faults.copy_job import CopyRun
from faults.epochs import EpochWatch
from faults.proxy import Link
from faults.replicas import committed_bytes, divergent_replicas, writers
from faults.schedule import COMBINED, DISK_FULL, KILL, PAUSE, PEER_CUT, ZK_CUT, make_schedule
from wirekafka.protocol import records


def test_a_seed_gives_one_schedule_and_pauses_outlast_the_session() -> None:
    first = make_schedule(7, (1, 2, 3), 40, 2.0, replica_lag_s=4.0)
    assert first == make_schedule(7, (1, 2, 3), 40, 2.0, replica_lag_s=4.0)
    assert first != make_schedule(8, (1, 2, 3), 40, 2.0, replica_lag_s=4.0)
    assert {f.kind for f in first} == {KILL, PAUSE, ZK_CUT, PEER_CUT} and {f.node for f in first} <= {1, 2, 3}
    assert all(f.hold_s > 2.0 for f in first if f.kind in (PAUSE, ZK_CUT))
    assert all(f.hold_s > 4.0 for f in first if f.kind == PEER_CUT)  # the ISR shrinks before the heal


def test_the_checkers_find_each_kind_of_loss() -> None:
    acks = [(0, 0, b"a"), (0, 1, b"b"), (1, 0, b"c"), (1, 1, b"d")]
    intact = {(0, 0): b"a", (0, 1): b"b", (1, 0): b"c", (1, 1): b"d"}
    assert judge(acks, intact).ok and judge(acks, intact).acknowledged == 4
    lost = judge(acks, {k: v for k, v in intact.items() if k != (1, 1)})
    assert lost.lost == [(1, 1, b"d")] and not lost.ok
    moved = judge(acks, {**intact, (0, 1): b"x", (0, 2): b"b"})  # b is there, but not where it was acknowledged
    assert moved.lost == [(0, 1, b"b")]
    reused = judge(acks + [(0, 1, b"e")], intact)
    assert reused.reused == [(0, 1)]
    duplicated = judge(acks, {**intact, (1, 2): b"a"})
    assert duplicated.duplicated == [b"a"] and duplicated.lost == []


def test_an_acknowledgement_without_an_offset_is_looked_for_in_its_partition() -> None:
    """librdkafka acknowledges some idempotent writes without an offset (None in confluent-kafka):
    the record must be stored in that partition, at whatever offset."""
    acks = [(0, 0, b"a"), (1, None, b"b")]
    assert judge(acks, {(0, 0): b"a", (1, 7): b"b"}).ok
    assert judge(acks, {(0, 0): b"a"}).lost == [(1, None, b"b")]
    assert judge(acks, {(0, 0): b"a", (0, 1): b"b"}).lost == [(1, None, b"b")]  # in another partition


def _segments(directory: Path, batches: list[bytes], roll_every: int) -> Path:
    """A partition directory holding batches in segments of roll_every batches each."""
    directory.mkdir(parents=True)
    for start in range(0, len(batches), roll_every):
        base = records.parse_header(batches[start]).base_offset
        (directory / f"{base:020d}.log").write_bytes(b"".join(batches[start:start + roll_every]))
    return directory


def test_replicas_are_compared_by_their_committed_bytes_whatever_their_segments(tmp_path: Path) -> None:
    batches = [records.build_batch([(None, b"v%d" % i, 1_700_000_000_000)], base_offset=i) for i in range(10)]
    other = records.build_batch([(None, b"other", 1_700_000_000_000)], base_offset=5)
    leader = _segments(tmp_path / "1" / "t-0", batches, 4)
    follower = _segments(tmp_path / "2" / "t-0", batches, 3)  # rolled elsewhere: the same bytes
    assert committed_bytes(leader, 8) == committed_bytes(follower, 8)
    assert divergent_replicas({1: leader, 2: follower}, 8, timeout=0) == []
    diverged = _segments(tmp_path / "3" / "t-0", batches[:5] + [other] + batches[6:], 10)
    assert divergent_replicas({1: leader, 3: diverged}, 8, timeout=0) != []
    assert divergent_replicas({1: leader, 3: diverged}, 5, timeout=0) == []  # below the divergence
    behind = _segments(tmp_path / "4" / "t-0", batches[:6], 10)
    assert divergent_replicas({1: leader, 4: behind}, 8, timeout=0) == ["node 4 holds offsets below 6 of 8 committed"]


def test_a_cut_link_refuses_until_healed_and_carries_bytes_again() -> None:
    with socket.create_server(("127.0.0.1", 0)) as upstream:
        link = Link(upstream.getsockname()[:2])
        try:
            client = socket.create_connection(("127.0.0.1", link.port), timeout=5)
            server, _ = upstream.accept()
            client.sendall(b"ping")
            assert server.recv(4) == b"ping"
            link.cut()
            assert client.recv(4) == b""  # the connection through it is gone
            refused = socket.create_connection(("127.0.0.1", link.port), timeout=5)
            assert refused.recv(4) == b""  # accepted and closed at once while cut
            link.heal()
            again = socket.create_connection(("127.0.0.1", link.port), timeout=5)
            server2, _ = upstream.accept()
            server2.sendall(b"pong")
            assert again.recv(4) == b"pong"
            for s in (client, server, refused, again, server2):
                s.close()
        finally:
            link.close()


def test_the_epoch_watch_reports_every_read_below_the_highest_epoch_seen() -> None:
    watch = EpochWatch("127.0.0.1:1", "t", 1)  # never started: only what it makes of the values it reads
    for value in (1, 1, 2, 5, None, 5):
        watch._see("controller epoch", value)
    assert watch.went_back == []
    watch._see("controller epoch", 3)
    watch._see("controller epoch", 4)  # still below the highest seen (5)
    watch._see("t-0 leader epoch", 0)
    assert watch.went_back == ["controller epoch went back from 5 to 3", "controller epoch went back from 5 to 4"]


def test_the_copy_is_judged_exactly_once() -> None:
    inputs = [b"v1", b"v2", b"v3"]
    assert judge_copy(inputs, [b"v2", b"v1", b"v3"]).ok
    verdict = judge_copy(inputs, [b"v1", b"v1", b"v3", b"aborted-only"])
    assert (verdict.missing, verdict.duplicated, verdict.foreign) == ([b"v2"], [b"v1"], [b"aborted-only"])
    assert not verdict.ok
    whole = Verdict(acknowledged=3, copy=verdict)
    assert not whole.ok and "missing 1, duplicated 1, foreign 1" in whole.row()
    reported = judge_copy(inputs, inputs, CopyRun(copied=3, commits=2, aborts=1, random_aborts=1, restarts=0))
    assert reported.ok and "in 2 transactions (1 aborted on purpose, 1 after an error, 0 producers" in reported.row()


def test_a_value_the_input_holds_twice_is_wanted_twice_in_the_copy() -> None:
    """A re-sent value (stored at two offsets by two epochs) is two input records: the copy holds
    it twice when exactly once, and once or three times when not."""
    inputs = [b"v1", b"v2", b"v2"]
    assert judge_copy(inputs, [b"v2", b"v1", b"v2"]).ok
    assert judge_copy(inputs, [b"v1", b"v2"]).missing == [b"v2"]
    assert judge_copy(inputs, [b"v1", b"v2", b"v2", b"v2"]).duplicated == [b"v2"]


def test_the_default_kinds_give_the_schedules_earlier_seeds_gave() -> None:
    """New kinds draw nothing unless chosen: seed 20261128's first faults are still those of the
    short run before combined and full-disk faults existed."""
    first = make_schedule(20261128, (1, 2, 3), 4, 2.0, (KILL, PAUSE))
    assert [(f.kind, f.node, f.hold_s, f.settle_s) for f in first] == [
        ("pause", 1, 2.67, 3.98), ("pause", 3, 3.09, 3.73), ("kill", 2, 1.08, 2.19), ("pause", 2, 2.78, 2.72)]


def test_a_combined_fault_overlaps_two_faults_on_two_nodes() -> None:
    faults = make_schedule(11, (1, 2, 3), 30, 2.0, (COMBINED, DISK_FULL), 4.0, combinable=(KILL, PAUSE, PEER_CUT))
    assert faults == make_schedule(11, (1, 2, 3), 30, 2.0, (COMBINED, DISK_FULL), 4.0,
                                   combinable=(KILL, PAUSE, PEER_CUT))
    combined = [f for f in faults if f.kind == COMBINED]
    assert combined and any(f.kind == DISK_FULL and 1.0 <= f.hold_s <= 4.0 for f in faults)
    for fault in combined:
        first, second = fault.parts
        assert first.node != second.node and fault.node == first.node
        assert {first.kind, second.kind} <= {KILL, PAUSE, PEER_CUT} and fault.kinds() == (first.kind, second.kind)
        assert fault.delay_s <= first.hold_s / 2  # the second starts while the first holds
        assert fault.hold_s >= max(first.hold_s, fault.delay_s + second.hold_s)


def test_a_committed_offset_asked_after_a_higher_one_was_answered_went_back() -> None:
    # partition, offset, sent, answered
    fine = [(0, 10, 0.0, 1.0), (0, 20, 1.5, 2.0), (0, 15, 1.8, 2.5), (1, 5, 0.0, 9.0), (1, 3, 1.0, 2.0)]
    assert committed_went_back(fine) == []  # 15 and 3 were in flight beside the higher ones: unordered
    assert committed_went_back(fine + [(0, 12, 3.0, 3.5)]) == ["partition 0: committed 12 after 20 was committed"]


def test_the_group_checker_finds_skipped_garbage_and_undrained() -> None:
    log = {(0, 0): b"a", (0, 1): b"b", (0, 2): b"c", (1, 0): b"d", (1, 1): b"e"}
    acks = [(0, 0, b"a"), (0, 1, b"b"), (0, 2, b"c"), (1, 0, b"d"), (1, None, b"e")]
    hws = {0: 3, 1: 2, 2: 0}
    every = {(0, 0, b"a"), (0, 1, b"b"), (0, 2, b"c"), (1, 0, b"d"), (1, 1, b"e")}
    commits = [(0, 2, 0.0, 0.1), (0, 3, 0.2, 0.3), (1, 2, 0.0, 0.1)]
    ok = judge_group(acks, log, hws, every, 7, commits, {0: 3, 1: 2, 2: -1001}, consumers=3, rejoins=1)
    assert ok.ok, ok.row()
    assert (ok.delivered, ok.distinct, ok.commits, ok.rejoins) == (7, 5, 3, 1)
    skipped = judge_group(acks, log, hws, every - {(0, 1, b"b"), (1, 1, b"e")}, 3, commits, {0: 3, 1: 2})
    assert skipped.skipped == [(0, 1, b"b"), (1, 1, b"e")]  # found at offset 1 and not skipped.ok
    garbage = judge_group(acks, log, hws, every | {(0, 1, b"x"), (1, 5, b"e")}, 7, commits, {0: 3, 1: 2})
    assert garbage.garbage == [(0, 1, b"x"), (1, 5, b"e")]
    behind = judge_group(acks, log, hws, every, 5, commits[:1], {0: 2, 1: -1001})
    assert behind.undrained == ["partition 0: committed 2, high watermark 3", "partition 1: committed -1001, high watermark 2"]
    assert behind.skipped == [] and behind.went_back == []  # nothing is owed below what was committed
    back = judge_group(acks, log, hws, every, 5, commits, {0: 2, 1: 2})
    assert back.went_back == ["partition 0: the group's final offset 2 is below 3, committed before"]
    assert "committed offsets gone back 1, skipped 0, garbage 0, undrained 1" in Verdict(group=back).row()
    assert not Verdict(group=back).ok


def test_filling_refuses_a_directory_that_is_not_a_tmpfs_of_its_own(tmp_path: Path) -> None:
    with pytest.raises(disks.DiskUnavailable, match="not a tmpfs of its own"):
        disks.fill(tmp_path)
    assert not (tmp_path / disks.FILLER).exists()


def test_a_tmpfs_log_dir_fills_to_enospc_and_frees(tmp_path: Path) -> None:
    """Needs root, as the nemesis's full disks do: without it this fails, saying why."""
    directory = tmp_path / "logs"
    with disks.tmpfs_disks([directory], 2):
        (directory / "t-0").mkdir()
        taken = disks.fill(directory)
        assert 1 << 20 < taken <= 2 << 20
        with pytest.raises(OSError) as full:
            (directory / "t-0" / "00000000000000000000.log").write_bytes(b"x" * 8192)
        assert full.value.errno == 28  # ENOSPC
        disks.free(directory)
        (directory / "t-0" / "00000000000000000000.log").write_bytes(b"x" * 8192)
    assert not directory.is_mount() and not (directory / "t-0").exists()


def test_a_tmpfs_that_cannot_be_mounted_is_refused_with_the_reason(tmp_path: Path) -> None:
    """A run asking for full disks where mounting fails must fail, not pass untried (here the
    mount fails for a size tmpfs refuses; without root it fails the same way)."""
    with pytest.raises(disks.DiskUnavailable, match="needs .* on a tmpfs of its own, and mounting it failed"):
        with disks.tmpfs_disks([tmp_path / "logs"], -5):
            pass
    assert not (tmp_path / "logs").is_mount()


def test_a_value_stored_by_two_producer_epochs_is_the_clients_resend_not_a_duplicate() -> None:
    """Kafka deduplicates an idempotent producer per (producer id, epoch): a value stored under
    two epochs was sent twice by the client (librdkafka after an epoch bump), one stored twice
    under the same epoch is the broker's failure, and without writers both count as duplicated."""
    acks: list[Ack] = [(0, 0, b"a"), (0, 1, b"b")]
    log = {(0, 0): b"a", (0, 1): b"b", (0, 2): b"a"}
    resent = judge(acks, log, {(0, 0): (7, 0), (0, 1): (7, 0), (0, 2): (7, 1)})
    assert resent.ok and resent.duplicated == []
    assert resent.resent == ["a: partition 0 offset 0 by producer 7 epoch 0, partition 0 offset 2 by producer 7 epoch 1"]
    assert "re-sent by the client after an epoch bump 1" in resent.row()
    assert judge(acks, log, {(0, 0): (7, 1), (0, 1): (7, 0), (0, 2): (8, 1)}).resent != []  # a new producer id
    same = judge(acks, log, {(0, 0): (7, 0), (0, 1): (7, 0), (0, 2): (7, 0)})
    assert same.duplicated == [b"a"] and same.resent == [] and not same.ok
    thrice = judge(acks, {**log, (0, 3): b"a"}, {(0, 0): (7, 0), (0, 1): (7, 0), (0, 2): (7, 1), (0, 3): (7, 1)})
    assert thrice.duplicated == [b"a"]  # two of its copies under one epoch
    assert judge(acks, log).duplicated == [b"a"]


def test_each_committed_offset_is_read_with_its_batchs_producer_and_epoch(tmp_path: Path) -> None:
    stamp = 1_700_000_000_000
    batches = [records.build_batch([(None, b"x", stamp), (None, b"y", stamp)], base_offset=0, producer_id=7,
                                   producer_epoch=0, base_sequence=0),
               records.build_batch([(None, b"z", stamp)], base_offset=2),
               records.build_batch([(None, b"x", stamp)], base_offset=3, producer_id=7, producer_epoch=1,
                                   base_sequence=0)]
    partition = _segments(tmp_path / "1" / "t-0", batches, 2)
    assert writers(partition, 4) == {0: (7, 0), 1: (7, 0), 2: (-1, -1), 3: (7, 1)}
    assert writers(partition, 3) == {0: (7, 0), 1: (7, 0), 2: (-1, -1)}  # the high watermark bounds it
