"""The id of a ZooKeeper-mode broker started without broker.id, as Kafka 3.9 finds it
(getOrGenerateBrokerId): the one its log dir's meta.properties holds, else a new one from the
/brokers/seqid znode: each write bumps the znode's version, and the id is that version plus
reserved.broker.max.id, so generated ids never meet the ids given by hand (0 to that maximum).
The id is settled before the broker builds anything that uses it."""

from __future__ import annotations

import logging
from pathlib import Path

from kazoo.exceptions import NoNodeError

from wirekafka.broker.metadata.zk import layout as zl
from wirekafka.broker.metadata.zk.session import session_for
from wirekafka.config.broker_config import BrokerConfig
from wirekafka.storage import properties_file

log = logging.getLogger(__name__)


async def resolve_broker_id(config: BrokerConfig) -> BrokerConfig:
    """config itself when it names an id; else config with the stored or a generated one."""
    if not config.zookeeper_mode or config.node_id >= 0:
        return config
    stored = stored_broker_id(config.log_dir)
    if stored is not None:
        return config.with_node_id(stored)
    session = session_for(config)
    await session.start()
    try:
        sequence = await session.call(_next_sequence_id, session.client)
    finally:
        await session.close()
    generated = sequence + config.int("reserved.broker.max.id")
    log.info("generated broker id %d (%s version %d)", generated, zl.BROKER_SEQUENCE_ID, sequence)
    return config.with_node_id(generated)


def stored_broker_id(log_dir: Path) -> int | None:
    """The broker id in a log dir's meta.properties, if it was formatted."""
    meta = log_dir / "meta.properties"
    return broker_id_in(properties_file.read_properties(meta)) if meta.exists() else None


def broker_id_in(meta: dict[str, str]) -> int | None:
    """The id a meta.properties holds: broker.id (ZooKeeper mode, version 0) or node.id."""
    stored = meta.get("broker.id", meta.get("node.id"))
    return int(stored) if stored is not None else None


def _next_sequence_id(client) -> int:
    """Write /brokers/seqid (creating it the first time) and return its new version."""
    while True:
        try:
            return client.set(zl.BROKER_SEQUENCE_ID, b"").version
        except NoNodeError:
            client.ensure_path(zl.BROKER_SEQUENCE_ID)
