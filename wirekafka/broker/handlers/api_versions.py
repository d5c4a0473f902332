"""ApiVersions (key 18), v0-4.

- Lists exactly the APIs in protocol.api_versions.SUPPORTED.
- An unsupported ApiVersions version is answered at v0 with UNSUPPORTED_VERSION and, as Kafka
  does (KIP-511), only ApiVersions' own range: all a newer client needs to retry with a version
  we serve, after which it gets the full list.
- Features (KIP-584): on a single node transaction.version, supported 0-2 and finalized at 2 as
  a freshly formatted Kafka 4.3.1 cluster has it, so Kafka 4.x clients use transaction version 2
  (KIP-890 part 2: Produce v12 adds partitions, EndTxn v5 bumps the epoch). The finalized epoch
  is Kafka's metadata log offset there; wirekafka has no such log and answers 0, which clients
  only compare between brokers. The other features Kafka advertises gate protocols wirekafka
  does not serve (KRaft, KIP-848/share/streams groups, ELR), so they are left out and clients
  keep the classic behaviour. In ZooKeeper mode no features, as Kafka 3.9 answers there.
- Before v4 a supported feature whose minimum version is 0 is left out, as Kafka 4.x leaves it
  out (older clients refuse a minimum of 0), so v3 lists transaction.version as finalized only."""

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


TRANSACTION_VERSION = "transaction.version"
SUPPORTED_TRANSACTION_VERSIONS = (0, 2)
FINALIZED_TRANSACTION_VERSION = 2
FINALIZED_FEATURES_EPOCH = 0
MIN_VERSION_0_FROM = 4  # the first ApiVersions version whose supported features may start at 0
SERVED_FEATURES = frozenset({TRANSACTION_VERSION})  # single node; none in ZooKeeper mode


def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    zookeeper = ctx.state.config.zookeeper_mode
    lo, hi = SUPPORTED_TRANSACTION_VERSIONS
    supported = [] if zookeeper or (lo == 0 and ctx.version < MIN_VERSION_0_FROM) else [
        ApiVersionsResponse.SupportedFeatureKey(name=TRANSACTION_VERSION, min_version=lo, max_version=hi)]
    return ApiVersionsResponse(
        version=ctx.version,
        error_code=ErrorCode.NONE,
        api_keys=_keys(),
        throttle_time_ms=0,
        supported_features=supported,
        finalized_features_epoch=-1 if zookeeper else FINALIZED_FEATURES_EPOCH,
        finalized_features=[] if zookeeper else [ApiVersionsResponse.FinalizedFeatureKey(
            name=TRANSACTION_VERSION, max_version_level=FINALIZED_TRANSACTION_VERSION,
            min_version_level=FINALIZED_TRANSACTION_VERSION)],
        zk_migration_ready=False,
    )


def unsupported_version_response() -> ApiVersionsResponse:
    """The v0 body sent when the client asked for an ApiVersions version we do not serve."""
    return ApiVersionsResponse(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                               api_keys=_keys(only=ApiVersionsResponse.API_KEY))
