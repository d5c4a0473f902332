"""The ZooKeeper backend's reads and writes of Kafka 3.9's znodes: the one place its roles call
kazoo (the ACLs' znodes are acl_znodes.py's, the broker id sequence broker_id.py's).

Every function here is blocking and runs in a trio worker thread (`ZkSession.call`), taking the
kazoo client (or the session's per-path cache, which answers the same reads) as its first
argument. Reads of one level go out together as kazoo's async requests and are then collected,
so a whole-cluster read costs a round trip per level, not per znode. The controller's writes are
fenced: each transaction checks /controller_epoch's version beside the znode's own, so a
controller that was replaced fails instead of overwriting its successor's state."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from typing import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent

from wirekafka.broker.metadata.cluster_metadata import BrokerInfo, uuid_to_base64
from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk.controller import ClusterSnapshot, LeaderAndIsr, StateWrite, TopicView

log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK = 1000  # producer ids per /latest_producer_id_block claim, as Kafka's


def create_top_level_paths(client) -> None:
    for path in zl.PERSISTENT_PATHS:
        client.ensure_path(path)


def get_or_create_cluster_id(client) -> str:
    try:
        data, _ = client.get(zl.CLUSTER_ID)
        return zl.decode_cluster_id(data)
    except NoNodeError:
        pass
    new = uuid_to_base64(uuid.uuid4())
    try:
        client.create(zl.CLUSTER_ID, zl.encode_cluster_id(new), makepath=True)
        return new
    except NodeExistsError:
        data, _ = client.get(zl.CLUSTER_ID)
        return zl.decode_cluster_id(data)


def encode_state(state: LeaderAndIsr) -> bytes:
    return zl.PartitionState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                             controller_epoch=state.controller_epoch,
                             leader_recovery_state=zl.LeaderRecoveryState(state.leader_recovery_state)).encode()


def _decode_state(data: bytes) -> LeaderAndIsr:
    s = zl.PartitionState.decode(data)
    return LeaderAndIsr(s.leader, s.leader_epoch, tuple(s.isr), s.controller_epoch, int(s.leader_recovery_state))


class TopicMemo:
    """The topics of the last snapshot read through the cache, each with the cached answers it
    was decoded from. The cache hands out the same answer object until the znode's watch
    fires, so a topic whose answers are all the same objects as last time is the same: its
    TopicView is reused, not decoded again (JSON per partition state), and a reconcile costs
    decoding in proportion to what changed. The memo holds the answers, so they stay alive and
    an identity compares only with itself."""

    def __init__(self) -> None:
        self.topics: dict[str, tuple[tuple, TopicView]] = {}  # name -> (its answers, its view)


def read_snapshot(client, watch: Callable | None, config_entities: tuple[str, ...] = (),
                  memo: TopicMemo | None = None,
                  only: Callable[[list[str]], Iterable[str]] | None = None) -> ClusterSnapshot:
    """The whole cluster state, every read setting the watch, with the dynamic configs of
    config_entities (/config/brokers/<name>). The reads of one level go out together (kazoo's
    async calls) and are then collected: one round trip per level, not per znode, so a
    controller reacts to a dead broker in milliseconds, not a read per partition. With a memo
    (reads through the cache only), unchanged topics keep their TopicView. With `only` (the
    topics to read, given every topic's name), the snapshot holds those topics alone: what an
    election, a controlled shutdown or a reassignment decides on costs reads in proportion to
    the topics it touches, not to the cluster."""
    registrations = _request_brokers(client, watch)
    controller_read = client.get_async(zl.CONTROLLER, watch=watch)
    epoch_read = client.get_async(zl.CONTROLLER_EPOCH)
    names = client.get_children(zl.TOPICS, watch=watch)
    if only is not None:
        assert memo is None, "a partial read would leave the memo without the other topics"
        names = sorted(set(only(names)) & set(names))
    assignments = {n: client.get_async(zl.topic_path(n), watch=watch) for n in names}
    config_reads = {n: client.get_async(zl.topic_config_path(n), watch=watch) for n in names}
    # which partitions have a state znode: a new topic's are read only once the controller made
    # them (the listing's watch tells), not asked for one by one and refused meanwhile
    listings = {n: client.get_children_async(zl.topic_partitions_path(n), watch=watch) for n in names}
    deleting = tuple(client.get_children(zl.DELETE_TOPICS, watch=watch))
    legacy_reads = {path: client.get_async(path, watch=watch)
                    for path in (zl.REASSIGN_PARTITIONS, zl.PREFERRED_REPLICA_ELECTION)}
    broker_config_reads = {e: client.get_async(zl.broker_config_path(e), watch=watch) for e in config_entities}
    users = client.get_children(zl.USERS_CONFIG, watch=watch)  # created with the other persistent paths
    user_reads = {u: client.get_async(f"{zl.USERS_CONFIG}/{u}", watch=watch) for u in users}
    quota_reads = _read_quota_configs(client, watch, user_reads)

    brokers, broker_epochs = _collect_brokers(registrations)
    controller_data = _value(controller_read)
    if controller_data is None:
        watch_creation(client, [zl.CONTROLLER], watch)  # told when a controller is elected
    controller = _controller_id(controller_data)
    epoch_data = _value(epoch_read)
    controller_epoch, epoch_version = ((zl.decode_controller_epoch(epoch_data[0]), epoch_data[1].version)
                                       if epoch_data else (0, -1))
    topics: dict[str, TopicView] = {}
    state_paths: dict[str, list[str | None]] = {}  # per topic, by partition: None for one not read
    listed_of: dict[str, set[str]] = {}  # per topic, the partitions with a znode
    unlisted: list[str] = []  # topics without a …/partitions znode yet
    answers: dict[str, tuple] = {}
    known = memo.topics if memo is not None else {}
    known_absent: Callable[[str], bool] = getattr(client, "known_absent", lambda path: False)
    for name, read in assignments.items():
        data = _value(read)
        if data is None:
            continue
        config_data = _value(config_reads[name])
        remembered = known.get(name)
        if remembered is not None and remembered[0][0] is data and remembered[0][1] is config_data:
            last = remembered[1]  # the same assignment and configs: not decoded again
            view = TopicView(last.topic_id, last.assignment, last.configs, adding=last.adding,
                             removing=last.removing, version=last.version)
        else:
            ta = zl.TopicAssignment.decode(data[0])
            view = TopicView(ta.topic_id or uuid.UUID(int=0), {p: tuple(r) for p, r in ta.partitions.items()},
                             zl.decode_entity_config(config_data[0]) if config_data else {},
                             adding={p: tuple(r) for p, r in ta.adding_replicas.items()},
                             removing={p: tuple(r) for p, r in ta.removing_replicas.items()},
                             version=data[1].version)
        topics[name] = view
        listed = _value(listings[name])
        if listed is None:
            unlisted.append(zl.topic_partitions_path(name))
        made: set[str] = set(listed or ())
        answers[name] = (data, config_data, listed)
        state_paths[name] = [path if str(index) in made and not known_absent(path) else None
                             for index in view.assignment
                             for path in (zl.partition_state_path(name, index),)]
        listed_of[name] = made
    stateless = unlisted
    state_values = iter(read_all(client, [p for paths in state_paths.values() for p in paths], watch))
    for name, paths in state_paths.items():
        values = [next(state_values) for _ in paths]
        answers[name] += tuple(values)
        remembered = known.get(name)
        if remembered is not None and len(remembered[0]) == len(answers[name]) \
                and all(a is b for a, b in zip(remembered[0], answers[name])):
            topics[name] = remembered[1]  # every answer the same object: the same topic
            continue
        view = topics[name]
        for index, data in zip(view.assignment, values):
            if data is None:
                if str(index) in listed_of[name]:  # else the listing's watch tells when it is made
                    stateless.append(zl.partition_state_path(name, index))  # the controller has yet to elect
                continue
            view.states[index] = (_decode_state(data[0]), data[1].version)
    watch_creation(client, stateless, watch)
    if memo is not None:
        memo.topics = {name: (answers[name], topics[name]) for name in topics}
    legacy = {path: _value(read) for path, read in legacy_reads.items()}
    broker_configs = {e: _value(read) for e, read in broker_config_reads.items()}
    absent = [path for path, data in legacy.items() if data is None]
    absent += [zl.broker_config_path(e) for e, data in broker_configs.items() if data is None]
    watch_creation(client, absent, watch)
    reassign, elections = legacy[zl.REASSIGN_PARTITIONS], legacy[zl.PREFERRED_REPLICA_ELECTION]
    return ClusterSnapshot(
        brokers, controller, controller_epoch, epoch_version, topics, deleting,
        legacy_reassignments=(_decode_legacy(zl.decode_reassignment, reassign, {}), reassign[1].version)
        if reassign is not None else None,
        legacy_elections=_decode_legacy(zl.decode_preferred_replica_election, elections, set())
        if elections is not None else None,
        broker_configs={e: entity_config(zl.broker_config_path(e), data[0])
                        for e, data in broker_configs.items() if data is not None},
        users={zl.desanitize(u): entity_config(f"{zl.USERS_CONFIG}/{u}", data[0]) for u, read in user_reads.items()
               if (data := _value(read)) is not None},
        quota_configs={path: entity_config(f"{zl.CONFIG}/{path}", data[0]) for path, read in quota_reads.items()
                       if (data := _value(read)) is not None},
        broker_epochs=broker_epochs)


def read_for_alter_partition(client, broker_id: int, paths: list[str]
                              ) -> tuple[int | None, set[int], list[tuple[LeaderAndIsr, int] | None]]:
    """What the controller checks an AlterPartition against, read together: the requester's
    broker epoch (its registration's czxid, None when not registered), the live broker ids, and
    each state znode (state and version, None when absent)."""
    registration = client.exists_async(zl.broker_path(broker_id))
    children = client.get_children_async(zl.BROKER_IDS)
    reads = [client.get_async(path) for path in paths]
    stat = registration.get()
    states = [(_decode_state(data[0]), data[1].version) if (data := _value(read)) is not None else None
              for read in reads]
    return (stat.czxid if stat is not None else None), {int(c) for c in children.get()}, states


def _request_brokers(client, watch: Callable | None) -> dict[int, object]:
    """The live brokers' registrations, requested together (async reads, by broker id)."""
    children = client.get_children(zl.BROKER_IDS, watch=watch)
    return {int(c): client.get_async(zl.broker_path(int(c)), watch=watch) for c in children}


def _collect_brokers(registrations: dict[int, object]) -> tuple[dict[int, BrokerInfo], dict[int, int]]:
    """The live brokers and their broker epochs (their registrations' czxids), by id."""
    brokers: dict[int, BrokerInfo] = {}
    epochs: dict[int, int] = {}
    for broker_id, read in registrations.items():
        data = _value(read)
        if data is not None:
            reg = zl.BrokerRegistration.decode(broker_id, data[0])
            endpoints = {e.listener: (e.host or "127.0.0.1", e.port) for e in reg.endpoints}
            first = reg.endpoints[0]
            brokers[broker_id] = BrokerInfo(broker_id, first.host or "127.0.0.1", first.port, reg.rack, endpoints)
            epochs[broker_id] = data[1].czxid
    return brokers, epochs


def read_brokers(client, watch: Callable | None) -> tuple[dict[int, BrokerInfo], dict[int, int]]:
    """The live brokers and their broker epochs, by id."""
    return _collect_brokers(_request_brokers(client, watch))


def watch_creation(client, paths: list[str], watch: Callable | None) -> None:
    """Watch znodes a read found missing, to be told when they are created. A read of a missing
    znode leaves no watch, so one created between that read and this exists() would never be
    told: such a node, found here, asks the caller for another reconcile at once (through the
    watch) instead of leaving it to the safety re-read seconds later."""
    created = [path for path, request in [(path, client.exists_async(path, watch=watch)) for path in paths]
               if request.get() is not None]
    if created and watch is not None:
        log.debug("created while being read: %s; reading again", created)
        for path in created:  # as their creation's watch would tell it: the rest of the cache stays
            watch(WatchedEvent(EventType.CREATED, KeeperState.CONNECTED, path))


def read_controller_id(client, watch: Callable | None) -> int:
    """The controller's broker id in /controller, -1 when there is none."""
    return _controller_id(_value(client.get_async(zl.CONTROLLER, watch=watch)))


def _controller_id(data) -> int:
    """The broker id a read of /controller names, -1 for none (the znode missing)."""
    return zl.ControllerRegistration.decode(data[0]).broker_id if data else -1


def _read_quota_configs(client, watch: Callable | None, user_reads: dict[str, object]) -> dict[str, object]:
    """Async reads of every quota entity's config znode, by path under /config: the users' (the
    caller's reads, by sanitized name, which also hold their SCRAM credentials), their per-client
    children, the client ids and the ips. A user's children are watched so that a first
    per-client quota is noticed."""
    reads = {f"{zl.USER_CONFIG_TYPE}/{u}": read for u, read in user_reads.items()}
    listings = {u: client.get_children_async(f"{zl.USERS_CONFIG}/{u}", watch=watch) for u in user_reads}
    client_listings = {}
    for user, listing in listings.items():
        if zl.USER_CLIENTS in (_value(listing) or ()):
            client_listings[user] = client.get_children_async(f"{zl.USERS_CONFIG}/{user}/{zl.USER_CLIENTS}",
                                                              watch=watch)
    for user, listing in client_listings.items():
        for name in _value(listing) or ():
            path = f"{zl.USER_CONFIG_TYPE}/{user}/{zl.USER_CLIENTS}/{name}"
            reads[path] = client.get_async(f"{zl.CONFIG}/{path}", watch=watch)
    for entity_type in (zl.CLIENT_CONFIG_TYPE, zl.IP_CONFIG_TYPE):
        for name in client.get_children(f"{zl.CONFIG}/{entity_type}", watch=watch):
            reads[f"{entity_type}/{name}"] = client.get_async(f"{zl.CONFIG}/{entity_type}/{name}", watch=watch)
    return reads


def entity_config(path: str, data: bytes) -> dict[str, str]:
    """An entity config znode's settings; one that cannot be read counts as none, logged."""
    try:
        return zl.decode_entity_config(data)
    except zl.ZkDataError as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}


_warned_invalid: set[int] = set()  # mzxids of the invalid legacy admin znodes already reported


def _decode_legacy(decode: Callable, data, empty):
    """A legacy admin znode's request, or `empty` if it is not valid JSON of its shape: Kafka
    ignores such a reassignment request and deletes such an election request unread."""
    try:
        return decode(data[0])
    except zl.ZkDataError as e:
        if data[1].mzxid not in _warned_invalid:
            _warned_invalid.add(data[1].mzxid)
            log.warning("ignoring an invalid legacy admin request: %s", e)
        return empty


def read_all(client, paths: list[str | None], watch: Callable | None) -> list:
    """The (data, stat) of each path (None for a missing znode, or for a None path, not read),
    in order. Every read is sent before any is collected: kazoo's connection thread sends or
    reads one message a turn, so a reader that kept a window of reads in flight (500) waited on
    it read by read, with the event loop's thread between them: at 10,000 partitions every
    partition had a leader 30-33 s after the create, not 13-18 s, and a controller failover
    took 56 and 242 s, not 27-34 s (two runs of the cluster-scale bench). Each read is dropped once
    collected, so what the cyclic collector can find alive (three objects a read in flight:
    light_result.py) shrinks as the answers come."""
    reads = [client.get_async(path, watch=watch) if path is not None else None for path in paths]
    values = []
    for i, read in enumerate(reads):
        reads[i] = None
        values.append(_value(read))
    return values


def _value(read):
    """(data, stat) of an async read, None if the znode does not exist (or was known not to,
    and not read: None)."""
    if read is None:
        return None
    try:
        return read.get()
    except NoNodeError as missing:
        # kazoo's async result keeps the error it raised, and the raise gave the error a traceback
        # whose frames (this one and its callers', up to a whole snapshot's reads) hold that
        # result: a cycle of tens of thousands of objects per reconcile that only a full
        # collection frees, a pause of hundreds of ms at 3,000 partitions (measured)
        missing.__traceback__ = None
        return None


def claim_controller(client, broker_id: int) -> int:
    """Create /controller and bump /controller_epoch in one transaction (Kafka's
    registerControllerAndIncrementControllerEpoch); raises NodeExistsError if another won."""
    while True:
        try:
            data, stat = client.get(zl.CONTROLLER_EPOCH)
            epoch, version = zl.decode_controller_epoch(data), stat.version
        except NoNodeError:
            try:
                client.create(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(zl.INITIAL_CONTROLLER_EPOCH))
            except NodeExistsError:
                pass
            continue
        tx = client.transaction()
        tx.create(zl.CONTROLLER, zl.ControllerRegistration(broker_id=broker_id,
                                                                timestamp_ms=int(time.time() * 1000)).encode(),
                  ephemeral=True)
        tx.set_data(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(epoch + 1), version=version)
        results = tx.commit()
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            return epoch + 1
        if any(isinstance(r, NodeExistsError) for r in failures):
            raise NodeExistsError()
        # the epoch moved under us without a controller: read again


class ControllerMovedError(BadVersionError):
    """A controller write's check of /controller_epoch failed: another broker is the controller."""


_STATES_PER_TRANSACTION = 100  # about 25 KB a transaction, far below ZooKeeper's 1 MB jute.maxbuffer


def write_states(client, writes: list[StateWrite], controller_epoch_version: int) -> list[Exception | int]:
    """Controller partition state writes, each fenced by the controller epoch's znode version
    (a controller that was replaced fails the check instead of overwriting its successor) and
    by the state znode's version. One result per write, in order: the state znode's new version
    (its partition epoch), or the error that rolled it back (ControllerMovedError when it was
    the controller epoch's check).

    The writes go in transactions of _STATES_PER_TRANSACTION, each one request (a new state's
    …/partitions/N parent created in it too), every transaction sent before any answer is
    awaited, in the order given (ZooKeeper applies one session's requests in order): a dead
    broker's thousand partitions cost ten requests, not a thousand, and requests are what the
    client library's one thread spends its time on. A transaction that one write makes fail (a
    state that moved, a parent already made) is written again one write a request, so that only
    that write fails."""
    new_states = [zl.partition_state_path(w.topic, w.partition) for w in writes if w.version is None]
    _create_missing({path.rsplit("/", 2)[0] for path in new_states}, client)  # each topic's …/partitions
    chunks = [writes[i:i + _STATES_PER_TRANSACTION] for i in range(0, len(writes), _STATES_PER_TRANSACTION)]
    sent = [_send_states(client, chunk, controller_epoch_version, with_parents=True) for chunk in chunks]
    results: list[Exception | int] = []
    for chunk, request in zip(chunks, sent):
        judged = _judge(chunk, _outcome(request), with_parents=True)
        results += judged if judged is not None else _write_one_by_one(client, chunk, controller_epoch_version)
    return results


def _write_one_by_one(client, writes: list[StateWrite], controller_epoch_version: int) -> list[Exception | int]:
    """A failed transaction's writes again, one a request: only the one that lost its race fails."""
    _create_missing({zl.partition_state_path(w.topic, w.partition).rsplit("/", 1)[0]
                     for w in writes if w.version is None}, client)
    sent = [_send_states(client, [w], controller_epoch_version, with_parents=False) for w in writes]
    return [result for w, request in zip(writes, sent)
            for result in _judge([w], _outcome(request), with_parents=False) or ()]


def _judge(writes: list[StateWrite], outcome: list | Exception, with_parents: bool) -> list[Exception | int] | None:
    """Each write's result from its transaction's outcome: the new versions when it committed,
    ControllerMovedError for all when the controller epoch's check failed, the error itself for
    a transaction of one write; None when one of several writes failed (which one is not told)."""
    if isinstance(outcome, Exception):  # the connection failed under it
        return [outcome] if len(writes) == 1 else None
    first = _first_error(outcome)
    if first is None:
        return _versions(writes, outcome, with_parents)
    if isinstance(outcome[0], BadVersionError):
        return [ControllerMovedError() for _ in writes]
    return [first] if len(writes) == 1 else None


def _send_states(client, writes: list[StateWrite], controller_epoch_version: int, with_parents: bool):
    """One transaction of state writes after the controller epoch's check, sent (not awaited)."""
    tx = client.transaction()
    tx.check(zl.CONTROLLER_EPOCH, controller_epoch_version)
    for w in writes:
        path = zl.partition_state_path(w.topic, w.partition)
        if w.version is None:
            if with_parents:
                tx.create(path.rsplit("/", 1)[0])
            tx.create(path, encode_state(w.state))
        else:
            tx.set_data(path, encode_state(w.state), version=w.version)
    return tx.commit_async()


def _outcome(request) -> list | Exception:
    """A sent transaction's results, or the error of the connection that failed under it."""
    try:
        return request.get()
    except Exception as e:  # noqa: BLE001
        return e


def _versions(writes: list[StateWrite], outcome: list, with_parents: bool) -> list[Exception | int]:
    """Each write's new state version from a committed transaction's results (after the check's):
    a created znode is at version 0, set_data answers the new stat."""
    results = iter(outcome[1:])
    versions: list[Exception | int] = []
    for w in writes:
        if w.version is None:
            if with_parents:
                next(results)  # the …/partitions/N parent's
            next(results)
            versions.append(0)
        else:
            versions.append(next(results).version)
    return versions


def _create_missing(paths: set[str], client) -> None:
    """Create the znodes that do not exist yet, in one pipelined round."""
    for request in [client.create_async(p) for p in sorted(paths)]:
        try:
            request.get()
        except NodeExistsError:
            pass


def create_topic_znodes(client, name: str, topic_id: uuid.UUID, assignment: dict[int, list[int]],
                         configs: dict[str, str]) -> None:
    if client.exists(zl.topic_path(name)) is not None:
        raise NodeExistsError()
    data = zl.encode_entity_config(configs)
    try:
        client.create(zl.topic_config_path(name), data, makepath=True)
    except NodeExistsError:
        client.set(zl.topic_config_path(name), data)
    client.create(zl.topic_path(name), zl.TopicAssignment(topic_id=topic_id, partitions={
        p: list(r) for p, r in assignment.items()}).encode(), makepath=True)


def set_assignment(client, name: str, topic_id: uuid.UUID, assignment: dict[int, list[int]],
                    adding: dict[int, list[int]] | None = None, removing: dict[int, list[int]] | None = None,
                    version: int = -1) -> None:
    client.set(zl.topic_path(name), zl.TopicAssignment(topic_id=topic_id, partitions=assignment,
                                                       adding_replicas=adding or {},
                                                       removing_replicas=removing or {}).encode(), version=version)


def drop_legacy_reassignments(client, partitions: set[tuple[str, int]], epoch_version: int | None) -> None:
    """Take partitions out of /admin/reassign_partitions, deleting it once empty; conditional on
    its version and, for the controller, on the controller epoch's."""
    try:
        data, stat = client.get(zl.REASSIGN_PARTITIONS)
    except NoNodeError:
        return
    try:
        entries = zl.decode_reassignment(data)
    except zl.ZkDataError:
        return
    left = {tp: r for tp, r in entries.items() if tp not in partitions}
    if len(left) == len(entries):
        return
    tx = client.transaction()
    if epoch_version is not None:
        tx.check(zl.CONTROLLER_EPOCH, epoch_version)
    if left:
        tx.set_data(zl.REASSIGN_PARTITIONS, zl.encode_reassignment(left), version=stat.version)
    else:
        tx.delete(zl.REASSIGN_PARTITIONS, version=stat.version)
    _raise_first(tx.commit())


def delete_fenced(client, paths: list[str], epoch_version: int) -> None:
    """Delete znodes as the controller, in one transaction: only while the controller epoch is still ours."""
    tx = client.transaction()
    tx.check(zl.CONTROLLER_EPOCH, epoch_version)
    for path in paths:
        tx.delete(path)
    _raise_first(tx.commit())


def _first_error(results: list) -> Exception | None:
    """The error that rolled a transaction back (its other operations report RolledBackError)."""
    return next((r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)), None)


def _raise_first(results: list) -> None:
    error = _first_error(results)
    if error is not None:
        raise error


def update_entity_config(client, entity_type: str, name: str, updates: dict[str, str | None]) -> None:
    """Change some keys of an entity's config znode (None removes one), keeping the others, as
    Kafka's AdminZkClient fetches an entity's config, edits it and writes it back."""
    try:
        data, _ = client.get(zl.entity_config_path(entity_type, name))
        configs = entity_config(zl.entity_config_path(entity_type, name), data)
    except NoNodeError:
        configs = {}
    for key, value in updates.items():
        if value is None:
            configs.pop(key, None)
        else:
            configs[key] = value
    set_entity_config(client, entity_type, name, configs)


def set_entity_config(client, entity_type: str, name: str, configs: dict[str, str]) -> None:
    """Write an entity's config znode, then the change notification Kafka's brokers watch for.
    A quota entity's znode (client, user, ip) left with no config and no children is removed
    instead, as Kafka's AdminZkClient cleans them up."""
    path = zl.entity_config_path(entity_type, name)
    children = client.get_children(path) if client.exists(path) else []
    if not configs and entity_type in zl.QUOTA_ENTITY_TYPES and not children:
        if client.exists(path):
            client.delete(path)
    else:
        data = zl.encode_entity_config(configs)
        try:
            client.set(path, data)
        except NoNodeError:
            client.create(path, data, makepath=True)
    client.create(zl.CONFIG_CHANGE_PREFIX, zl.encode_config_change(entity_type, name), sequence=True,
                  makepath=True)


def delete_topic_znodes(client, name: str) -> None:
    client.delete(zl.topic_path(name), recursive=True) if client.exists(zl.topic_path(name)) else None
    if client.exists(zl.topic_config_path(name)):
        client.delete(zl.topic_config_path(name))
    if client.exists(zl.delete_topic_path(name)):
        client.delete(zl.delete_topic_path(name))


def claim_producer_id_block(client, broker_id: int) -> int:
    """Kafka's ZkProducerIdManager: read the latest block, write the next one conditionally."""
    while True:
        try:
            data, stat = client.get(zl.LATEST_PRODUCER_ID_BLOCK)
        except NoNodeError:
            client.ensure_path(zl.LATEST_PRODUCER_ID_BLOCK)
            continue
        start = zl.ProducerIdBlock.decode(data).block_end + 1 if data else 0
        block = zl.ProducerIdBlock(broker_id=broker_id, block_start=start, block_end=start + PRODUCER_ID_BLOCK - 1)
        try:
            client.set(zl.LATEST_PRODUCER_ID_BLOCK, block.encode(), version=stat.version)
            return start
        except BadVersionError:
            continue



def register_broker(client, path: str, data: bytes):
    """Create this broker's ephemeral registration unless a node is there already (the previous
    session's, say, until ZooKeeper expires it); the node's stat afterwards (None if gone)."""
    try:
        client.create(path, data, ephemeral=True, makepath=True)
    except NodeExistsError:
        pass
    return client.exists(path)


def read_znode(client, path: str) -> bytes | None:
    """A znode's data, None when it does not exist."""
    try:
        data, _ = client.get(path)
    except NoNodeError:
        return None
    return data


def mark_topic_for_deletion(client, name: str) -> None:
    """/admin/delete_topics/<name>, for the controller to act on (already there: nothing to do)."""
    try:
        client.create(zl.delete_topic_path(name), b"", makepath=True)
    except NodeExistsError:
        pass


def propagate_log_dir_event(client, broker_id: int) -> None:
    """A log dir of this broker failed: a sequential notification for the controller (Kafka's
    ZkClient.propagateLogDirEvent), which then asks this broker which of its replicas are offline."""
    client.create(zl.LOG_DIR_EVENT_PREFIX, zl.encode_log_dir_event(broker_id), sequence=True, makepath=True)


def read_log_dir_events(client) -> dict[str, int]:
    """The pending log dir event notifications: each znode's name and the broker it names. One that
    cannot be read as such is named with broker -1 (the controller deletes it, as Kafka does)."""
    reads = {n: client.get_async(zl.log_dir_event_path(n))
             for n in client.get_children(zl.LOG_DIR_EVENT_NOTIFICATION)}
    events = {}
    for name, read in reads.items():
        data = _value(read)
        if data is None:
            continue
        try:
            events[name] = zl.decode_log_dir_event(data[0])
        except zl.ZkDataError:
            log.warning("ignoring an invalid log dir event notification %s", name)
            events[name] = -1
    return events

