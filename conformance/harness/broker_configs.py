"""Requests on BROKER config resources shared by the dynamic broker config scenarios: this
node's id, IncrementalAlterConfigs and AlterConfigs on one resource, and DescribeConfigs of
chosen keys with their value, read_only flag, source, synonyms and type."""

from __future__ import annotations

import contextlib
from typing import Iterator

from kafka.protocol.admin.cluster import DescribeClusterRequest
from kafka.protocol.admin.configs import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

from conformance.harness.wire import Connection

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_IR = IncrementalAlterConfigsRequest.AlterConfigsResource
_AR = AlterConfigsRequest.AlterConfigsResource

#: A described config: value, read_only, source, synonyms [(name, value, source)], type.
Described = tuple[str | None, bool, int, list[tuple[str, str | None, int]], int]


def node_id(conn: Connection) -> str:
    """The id of the broker behind conn (a one-node cluster: the controller's id)."""
    return str(conn.call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                                include_fenced_brokers=False), 0).controller_id)


def incremental(conn: Connection, name: str, ops: list[tuple[str, int, str | None]], version: int = 1,
                validate_only: bool = False, resource_type: int = BROKER) -> tuple[int, str | None]:
    """IncrementalAlterConfigs of one resource: (error code, message)."""
    req = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[_IR(
        resource_type=resource_type, resource_name=name,
        configs=[_IR.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])])
    r = conn.call(req, version).responses[0]
    return r.error_code, r.error_message


def legacy(conn: Connection, name: str, configs: dict[str, str], version: int = 1) -> tuple[int, str | None]:
    """AlterConfigs (the whole set) of one BROKER resource: (error code, message)."""
    req = AlterConfigsRequest(validate_only=False, resources=[_AR(
        resource_type=BROKER, resource_name=name,
        configs=[_AR.AlterableConfig(name=k, value=v) for k, v in configs.items()])])
    r = conn.call(req, version).responses[0]
    return r.error_code, r.error_message


def described(conn: Connection, resource_type: int, name: str, keys: list[str] | None,
              version: int = 4) -> dict[str, Described]:
    """The configs a resource lists (keys None: all of them)."""
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys)],
        include_synonyms=True, include_documentation=False)
    result = conn.call(req, version).results[0]
    assert (result.error_code, result.error_message) == (0, "")
    return {c.name: (c.value, c.read_only, c.config_source,
                     [(s.name, s.value, s.source) for s in c.synonyms], c.config_type) for c in result.configs}


@contextlib.contextmanager
def restored(conn: Connection, keys: list[str], cluster_default: dict[str, str] | None = None) -> Iterator[str]:
    """This node's id; afterwards the keys deleted on it and on the cluster default, and the
    cluster default's cluster_default entries set (dynamic configs outlive a test on the shared
    brokers, so every test leaves them as it found them)."""
    node = node_id(conn)
    try:
        yield node
    finally:
        assert incremental(conn, node, [(k, DELETE, None) for k in keys]) == (0, None)
        assert incremental(conn, "", [(k, DELETE, None) for k in keys]
                           + [(k, SET, v) for k, v in (cluster_default or {}).items()]) == (0, None)
