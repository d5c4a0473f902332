"""SaslHandshake (key 17), v0-1, and SaslAuthenticate (key 36), v0-2, once a connection is past
authentication or on a listener without SASL: Kafka's KafkaApis answers both with
ILLEGAL_SASL_STATE (SaslAuthenticate with "SaslAuthenticate request received after successful
authentication"). The exchange itself, before a SASL listener's connection is authenticated, is
the connection's: server/sasl_authenticator.py."""

from __future__ import annotations

from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.errors import ErrorCode


def handle_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(version=ctx.version, error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


def handle_authenticate(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(version=ctx.version, error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                    error_message="SaslAuthenticate request received after successful authentication",
                                    auth_bytes=b"", session_lifetime_ms=0)
