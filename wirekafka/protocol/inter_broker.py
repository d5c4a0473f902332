"""Schema classes of the inter-broker APIs that only a ZooKeeper-mode broker serves, built by
kafka-python's schema-driven codec from the JSON in `wirekafka.protocol.schemas`."""

from __future__ import annotations

from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage

from wirekafka.protocol import schemas


class AlterPartitionRequest(ApiMessage, load_json=schemas):
    pass


class AlterPartitionResponse(ApiMessage, load_json=schemas):
    pass


class LeaderAndIsrRequest(ApiMessage, load_json=schemas):
    # Kafka's schema names a field Type (v5+: whether every topic is in the request); its attribute
    # shadows kafka-python's `type` class property, by which a message picks its header, so this
    # one makes its request header itself.
    def with_header(self, correlation_id: int = 0, client_id: str = "kafka-python") -> None:
        self._header = RequestHeader(request_api_key=self.API_KEY, request_api_version=self.API_VERSION,
                                     correlation_id=correlation_id, client_id=client_id)


class LeaderAndIsrResponse(ApiMessage, load_json=schemas):
    pass


class ControlledShutdownRequest(ApiMessage, load_json=schemas):
    pass


class ControlledShutdownResponse(ApiMessage, load_json=schemas):
    pass
