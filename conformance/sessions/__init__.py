"""The client sessions `python -m conformance.harness.record` runs through the recording proxy.

Each session is one stock client doing one ordinary job against the broker whose address it is
given. Sessions are deterministic as far as a client allows: fixed topic and group names (each
session gets a fresh broker, in the recording and in the replay, so names never collide), fixed
record contents, bounded record counts, and loops bounded by deadlines. A session checks what
its client got (records consumed, tools' exit codes) and raises SessionFailed otherwise, so a
broken run never becomes a reference.

A session runs against the proxy's address; it also gets Kafka's own address, only to wait,
off the record, until Kafka shows a change a previous step made (KRaft applies topic and config
changes to the broker a moment after the admin request is answered). Reading it back through the
proxy at once would record Kafka's stale answer as the reference."""

from __future__ import annotations

from dataclasses import dataclass
import time
from typing import Callable


class SessionFailed(AssertionError):
    """The client did not get what the session expects; the recording would be no reference."""


@dataclass(frozen=True)
class Session:
    name: str
    client: str
    description: str
    run: Callable[[str, str], None]  # given the proxy's and Kafka's own address "host:port"


def all_sessions() -> list[Session]:
    from conformance.sessions import aiokafka_client, confluent, java_cli, kafka_python_client, kcat

    return [*confluent.SESSIONS, *kafka_python_client.SESSIONS, *aiokafka_client.SESSIONS,
            *java_cli.SESSIONS, *kcat.SESSIONS]


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise SessionFailed(message)


def settle(shown: Callable[[], bool], what: str, timeout: float = 20) -> None:
    """Wait (bounded) until ``shown()`` — a check against Kafka's own address — is true."""
    deadline = time.monotonic() + timeout
    while not shown():
        if time.monotonic() > deadline:
            raise SessionFailed(f"Kafka did not show {what} within {timeout:g}s")
        time.sleep(0.1)
