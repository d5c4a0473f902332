"""Schema classes of the inter-broker APIs that only a ZooKeeper-mode broker serves, built by
kafka-python's schema-driven codec from the JSON in `wirekafka.protocol.schemas`."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from wirekafka.protocol import schemas


class AlterPartitionRequest(ApiMessage, load_json=schemas):
    pass


class AlterPartitionResponse(ApiMessage, load_json=schemas):
    pass


class ControlledShutdownRequest(ApiMessage, load_json=schemas):
    pass


class ControlledShutdownResponse(ApiMessage, load_json=schemas):
    pass
