"""A stopping broker's ControlledShutdown request to the controller, as Kafka 3.9's ZooKeeper-mode
brokers send it (inter-broker protocol 3.9: version 3, with the broker epoch).

The controller moves the broker's leaderships to other in-sync replicas, takes it out of the ISRs
it follows, and answers with the partitions it still leads (those it could not move). The broker
asks again, up to controlled.shutdown.max.retries times with controlled.shutdown.retry.backoff.ms
between, until the answer is NONE with nothing remaining; then it stops. As in Kafka 3.9, the
connection to the controller must be ready within controller.socket.timeout.ms and the answer
come within request.timeout.ms."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import trio

from wirekafka.broker.replication.peer_client import PeerPool, PeerUnavailable, answer_of
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import ControlledShutdownRequest, ControlledShutdownResponse

log = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_VERSION = 3


@dataclass(frozen=True)
class ShutdownAnswer:
    """The controller's answer: its error, and the partitions this broker still leads."""

    error: ErrorCode
    remaining: tuple[tuple[str, int], ...] = ()

    @property
    def done(self) -> bool:
        return self.error == ErrorCode.NONE and not self.remaining


async def ask_controller(peers: PeerPool, controller: Callable[[], int], broker_epoch: int) -> ShutdownAnswer | None:
    """One ControlledShutdown to the controller this broker knows of; None when there is none or
    it cannot be reached (the caller backs off and asks again)."""
    target = controller()
    client = peers.client(target) if target >= 0 else None
    if client is None:
        log.info("controlled shutdown: no controller to ask")
        return None
    request = ControlledShutdownRequest(version=CONTROLLED_SHUTDOWN_VERSION, broker_id=peers.config.node_id,
                                        broker_epoch=broker_epoch)
    connect_within_ms = peers.config.int("controller.socket.timeout.ms")
    try:
        with trio.fail_after(connect_within_ms / 1000):
            await client.ready()
        answer = answer_of(await client.send(request, timeout_s=peers.config.int("request.timeout.ms") / 1000),
                           ControlledShutdownResponse)
    except trio.TooSlowError:
        log.info("controlled shutdown: no connection to controller %d within %d ms", target, connect_within_ms)
        return None
    except PeerUnavailable as exc:
        log.info("controlled shutdown: controller %d unreachable: %s", target, exc)
        return None
    return ShutdownAnswer(ErrorCode(answer.error_code),
                          tuple((p.topic_name, p.partition_index) for p in answer.remaining_partitions))
