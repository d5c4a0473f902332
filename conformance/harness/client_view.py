"""What the recording proxy changes in real Kafka's answers before its client sees them, and why.

A recorded session is the reference for wirekafka, so the client must make the requests it would
make to wirekafka; everything else is Kafka's answer as sent. The recording stores Kafka's bytes
unchanged, and the replayer compares wirekafka's answers with this same view of them, so a
rewrite here is never a hidden difference: it is the one place where the two brokers are
allowed to present themselves differently.

- Broker addresses (Metadata, FindCoordinator, DescribeCluster, the node endpoints of Produce
  and Fetch): the proxy's own listener, so all traffic keeps flowing through it. Addresses are
  volatile in the comparison anyway (compare.VOLATILE).
- ApiVersions: only the APIs and versions wirekafka serves (protocol.api_versions.SUPPORTED),
  and only the features its ApiVersions handler advertises (transaction.version), with Kafka's
  levels (the finalized epoch -1 when none is left). A client picks its
  requests from this answer (a Java admin falls back from DescribeTopicPartitions to Metadata, a
  consumer from ConsumerGroupDescribe to DescribeGroups); which APIs wirekafka lacks is a
  coverage question, not a conformance one. A version wirekafka advertises beyond Kafka's still
  shows as a difference, since the view only narrows Kafka's ranges.
- Fetch: the session id is 0 (KIP-227 lets a broker answer 0 = no session created), so the
  client keeps sending full fetches, each a request of its own that a replay can send in any
  state. The replay runs wirekafka without session slots to match (replay_session); incremental
  fetches are compared scenario by scenario instead (conformance/test_fetch_sessions.py)."""

from __future__ import annotations

from typing import Any

from conformance.harness.frames import structs
from wirekafka.broker.handlers.api_versions import SERVED_FEATURES
from wirekafka.protocol.served_versions import SUPPORTED

PRODUCE, FETCH, METADATA, FIND_COORDINATOR, API_VERSIONS, DESCRIBE_CLUSTER = 0, 1, 3, 10, 18, 60
ADDRESS_APIS = frozenset({PRODUCE, FETCH, METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})
CHANGED_APIS = ADDRESS_APIS | {API_VERSIONS}


def present(api_key: int, response: Any, listener: tuple[str, int] | None) -> bool:
    """Turn a decoded Kafka response into what the client sees, in place; True if anything
    changed. ``listener`` is the proxy's address (None: leave addresses, they are volatile)."""
    changed = False
    if listener is not None and api_key in ADDRESS_APIS:
        changed |= _point_at(response, listener)
    if api_key == API_VERSIONS:
        changed |= _served_apis_only(response)
    if api_key == FETCH and getattr(response, "session_id", 0) != 0:
        response.session_id = 0
        changed = True
    return changed


def _point_at(response: Any, listener: tuple[str, int]) -> bool:
    """Every broker endpoint (a struct with host and port) now names the listener; an endpoint
    that names no broker (empty host or port -1, as in an error answer) is kept."""
    changed = False
    for struct in structs(response):
        fields = struct.fields
        if "host" in fields and "port" in fields and struct.host and struct.port >= 0:
            if (struct.host, struct.port) != listener:
                struct.host, struct.port = listener
                changed = True
    return changed


def _served_apis_only(response: Any) -> bool:
    before = [(e.api_key, e.min_version, e.max_version) for e in response.api_keys or []]
    keys = []
    for entry in response.api_keys or []:
        served = SUPPORTED.get(entry.api_key)
        if served is None:
            continue
        lo, hi = max(entry.min_version, served[0]), min(entry.max_version, served[1])
        if lo <= hi:
            entry.min_version, entry.max_version = lo, hi
            keys.append(entry)
    response.api_keys = keys
    changed = before != [(e.api_key, e.min_version, e.max_version) for e in keys]
    if (response.version or 0) >= 3:
        supported = [f for f in response.supported_features or [] if f.name in SERVED_FEATURES]
        finalized = [f for f in response.finalized_features or [] if f.name in SERVED_FEATURES]
        epoch = response.finalized_features_epoch if finalized else -1
        changed |= (len(supported), len(finalized), epoch) != (
            len(response.supported_features or []), len(response.finalized_features or []),
            response.finalized_features_epoch)
        response.supported_features, response.finalized_features = supported, finalized
        response.finalized_features_epoch = epoch
    return changed
