"""ApiVersions (key 18), v0-4.

- Lists exactly the APIs in protocol.api_versions.SUPPORTED.
- An unsupported ApiVersions version is answered at v0 with UNSUPPORTED_VERSION and, as Kafka
  does (KIP-511), only ApiVersions' own range: all a newer client needs to retry with a version
  we serve, after which it gets the full list.
- No features are advertised (no finalized metadata/transaction/group versions): clients then
  use the classic behaviour for each."""

from __future__ import annotations

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from wirekafka.broker.context import RequestContext
from wirekafka.protocol.served_versions import SUPPORTED
from wirekafka.protocol.errors import ErrorCode


def _keys(only: int | None = None) -> list:
    return [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, (lo, hi) in sorted(SUPPORTED.items()) if only is None or k == only
    ]


def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        version=ctx.version,
        error_code=ErrorCode.NONE,
        api_keys=_keys(),
        throttle_time_ms=0,
        supported_features=[],
        finalized_features_epoch=-1,
        finalized_features=[],
        zk_migration_ready=False,
    )


def unsupported_version_response() -> ApiVersionsResponse:
    """The v0 body sent when the client asked for an ApiVersions version we do not serve."""
    return ApiVersionsResponse(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                               api_keys=_keys(only=ApiVersionsResponse.API_KEY))
