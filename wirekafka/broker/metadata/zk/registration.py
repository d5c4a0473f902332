"""Registrar: this broker's ephemeral /brokers/ids/N registration, made before it serves and again
after a session expiry (ZooKeeper then removed it). The registration's czxid is the broker epoch
that AlterPartition and ControlledShutdown name, so a request of a broker's previous life is
told apart from its current one."""

from __future__ import annotations

import logging
import time

import trio

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk import znode_io as io
from wirekafka.broker.metadata.zk.session import ZkSession
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.startup_errors import StartupError

log = logging.getLogger(__name__)


class Registrar:
    def __init__(self, config: BrokerConfig, zk: ZkSession) -> None:
        self.config = config
        self.node_id = config.node_id
        self.zk = zk
        self.broker_epoch = -1  # the czxid of this broker's registration
        self._registered_session: int | None = None

    @property
    def current(self) -> bool:
        """Registered in the session that is open now."""
        return self.zk.session_id() == self._registered_session

    async def register(self) -> None:
        """Create /brokers/ids/N (ephemeral). After a kill -9 the previous session's node may
        still be there until ZooKeeper expires it: wait for that, up to the session timeout."""
        data = zl.BrokerRegistration(
            broker_id=self.node_id,
            endpoints=tuple(zl.Endpoint(adv.name, adv.host, adv.port, self.config.security_protocol(adv.name))
                            for adv in self.config.advertised_listeners),
            rack=self.config.text_if_set("broker.rack"),
            timestamp_ms=int(time.time() * 1000),
        ).encode()
        deadline = trio.current_time() + self.config.int("zookeeper.session.timeout.ms") / 1000 + 5
        path = zl.broker_path(self.node_id)
        while True:
            stat = await self.zk.call(io.register_broker, self.zk.client, path, data)
            if stat is not None and stat.ephemeralOwner == self.zk.session_id():
                break
            if trio.current_time() > deadline:
                raise StartupError(f"broker id {self.node_id} is registered by another live broker") from None
            await trio.sleep(0.25)
        self.broker_epoch = stat.czxid  # Kafka's broker epoch, named in AlterPartition
        self._registered_session = self.zk.session_id()
        log.info("registered broker %d at %s", self.node_id, path)
