"""max.connections.per.ip.overrides ("host:count,..."): parsed as Kafka parses it, and its host
names resolved as Kafka resolves them when it applies the setting (at start-up, and on a dynamic
change: dynamic.py, server/connection_quotas.py)."""

from __future__ import annotations

import re
import socket

from wirekafka.startup_errors import ConfigError


def parse_csv_map(value: str, key: str = "max.connections.per.ip.overrides") -> dict[str, int]:
    """A "name:count,..." setting as Kafka parses it: split around commas, each entry at its last
    colon, both sides trimmed. ValueError with the text of the Java exception Kafka answers for
    an entry without a colon or a count that is not an INT."""
    out: dict[str, int] = {}
    entries = re.split(r"\s*,\s*", value) if value else []
    while entries and entries[-1] == "":  # Java's split drops trailing empty strings
        entries.pop()
    for entry in entries:
        colon = entry.rfind(":")
        if colon < 0:
            raise ValueError(f"Error parsing configuration property '{key}': begin 0, end -1, length {len(entry)}")
        count = entry[colon + 1:].strip()
        if not re.fullmatch(r"[+-]?\d+", count) or not -2**31 <= int(count) < 2**31:
            raise ValueError(f'For input string: "{count}"')
        out[entry[:colon].strip()] = int(count)
    return out


def resolve_ip_overrides(value: str) -> tuple[dict[str, int], list[str]]:
    """max.connections.per.ip.overrides as address -> count, host names resolved as Kafka does
    when it applies the setting; also the names that did not resolve. ValueError: see
    parse_csv_map."""
    out: dict[str, int] = {}
    unresolved = []
    for host, limit in parse_csv_map(value).items():
        try:
            out[socket.gethostbyname(host)] = limit
        except OSError:
            unresolved.append(host)
    return out, unresolved


def parse_ip_overrides(value: str) -> dict[str, int]:
    """max.connections.per.ip.overrides at start-up: address -> count; a malformed entry or a
    host name that does not resolve stops start-up."""
    try:
        out, unresolved = resolve_ip_overrides(value)
    except ValueError as exc:
        raise ConfigError(f"Invalid value {value} for configuration max.connections.per.ip.overrides: {exc}") from None
    if unresolved:
        raise ConfigError(f"Invalid value {value} for configuration max.connections.per.ip.overrides: "
                          f"host {unresolved[0]!r} does not resolve")
    return out
