"""Kafka's request log: the logger `kafka.request.logger`, which at DEBUG writes one line per
completed request, "Completed request:" followed by a JSON object with the request header, the
connection, the total time and the session (security protocol, principal, listener). Kafka's line
also carries the request and response bodies and its queue/local/remote time split; wirekafka has
no request queue or handler pool to split the time by, and leaves the bodies out (they hold
records and secrets). It adds the request's size in bytes.

The caller tests `enabled()` once per request, so the line costs nothing while DEBUG is off."""

from __future__ import annotations

import json
import logging

from wirekafka.broker.metrics.api_names import constant_name
from wirekafka.protocol.codec import RequestHeader

logger = logging.getLogger("kafka.request.logger")


def enabled() -> bool:
    return logger.isEnabledFor(logging.DEBUG)


def completed(header: RequestHeader, peer: str, listener: str, protocol: str, principal: str, size: int,
              total_ms: float) -> None:
    """Log one completed request (call only when enabled())."""
    desc = {
        "requestHeader": {"requestApiKey": header.api_key, "requestApiVersion": header.api_version,
                          "correlationId": header.correlation_id, "clientId": header.client_id,
                          "requestApiKeyName": constant_name(header.api_key)},
        "connection": peer,
        "totalTimeMs": round(total_ms, 3),
        "requestSize": size,
        "securityProtocol": protocol,
        "principal": f"User:{principal}",
        "listener": listener,
    }
    logger.debug("Completed request:%s", json.dumps(desc, separators=(",", ":")))
