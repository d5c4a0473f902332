"""What a handler sees of the request it answers: the broker state and the request header."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable

import trio

from wirekafka.security.acl.authorizer import CLUSTER_NAME, OPERATIONS, AclOperation, ResourceType
from wirekafka.broker.state import BrokerState
from wirekafka.protocol.codec import RequestHeader


class CloseConnection(Exception):
    """Raised by a handler when Kafka would drop the connection instead of answering
    (for example an acks=0 produce that failed: the only way to tell that client)."""


@dataclass(slots=True)
class RequestContext:
    state: BrokerState
    header: RequestHeader
    # the listener the request came in on: Metadata and the coordinator look-ups answer with
    # the brokers' endpoints on that same listener, as Kafka does
    listener: str
    peer: str = ""
    # the session principal's name (a SASL user, a client certificate's subject), ANONYMOUS
    # without one: the user client quotas are looked up by
    principal: str = "ANONYMOUS"
    # the request's size as Kafka counts it for the produce byte quota: header and body
    request_size: int = 0
    # until when (trio clock) the connection stays muted after this response, for a quota's
    # throttle time counted from when it was decided: the next request is read only then, as
    # Kafka mutes a throttled channel (KIP-219); the response itself is never held back
    mute_until: float = 0.0
    # the request's running time when the request quota began timing it (None: not timed)
    timing_since: int | None = None

    def mute(self, throttle_ms: int) -> None:
        """Mute the connection for a quota's throttle time from now (the latest end counts)."""
        if throttle_ms > 0:
            self.mute_until = max(self.mute_until, trio.current_time() + throttle_ms / 1000)

    @property
    def client_id(self) -> str:
        """The request header's client id, "" for none (as Kafka's quotas and groups read it)."""
        return self.header.client_id or ""

    @property
    def version(self) -> int:
        return self.header.api_version

    # ---- authorization (Kafka's AuthHelper): everything is allowed without an authorizer ---------
    @property
    def kafka_principal(self) -> str:
        """The session's principal as ACLs name it ("User:alice")."""
        return f"User:{self.principal}"

    @property
    def client_host(self) -> str:
        """The client's address as an ACL's host names it: Java's getHostAddress, which writes
        an IPv6 address uncompressed ("0:0:0:0:0:0:0:1") and an IPv4-mapped one as IPv4."""
        host = self.peer.rsplit(":", 1)[0]
        return host if ":" not in host else java_host_address(host)

    def authorized(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        authorizer = self.state.authorizer
        return authorizer is None or authorizer.authorize(self.kafka_principal, self.client_host, operation,
                                                          resource_type, name)

    def authorized_cluster(self, operation: AclOperation) -> bool:
        return self.authorized(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorized_names(self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]) -> set[str]:
        """The names among `names` the session may do `operation` on (Kafka's filterByAuthorized)."""
        return {n for n in names if self.authorized(operation, resource_type, n)}

    def authorized_by_resource_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        authorizer = self.state.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(
            self.kafka_principal, self.client_host, operation, resource_type)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The authorized-operations bit field of a resource (every supported one without an
        authorizer)."""
        authorizer = self.state.authorizer
        if authorizer is None:
            return sum(1 << op for op in OPERATIONS[resource_type])
        return authorizer.authorized_operations(self.kafka_principal, self.client_host, resource_type, name)


def java_host_address(ipv6: str) -> str:
    """An IPv6 address as Java's InetAddress.getHostAddress writes it."""
    address = ipaddress.IPv6Address(ipv6.split("%", 1)[0])
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))
