"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), v0, as Kafka 4's
ScramImage and ScramControlManager answer them.

- Alter: upsertions carry the salt, iterations and the salted password the client computed; the
  broker keeps the salt, iterations and the keys derived from it (never the password). Per user:
  a user named twice in one request (deletions and upsertions together) is DUPLICATE_RESOURCE "A
  user credential cannot be altered twice in the same request"; an empty name
  UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a mechanism other than 1
  (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism";
  iterations outside 4096-16384 UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many
  iterations"; deleting a credential that does not exist RESOURCE_NOT_FOUND. The accepted
  changes are stored together. Results list deletions, then upsertions, then errors, each in the
  order of Kafka's HashMap of user names.
- Describe: the users named (none or null: every user with a credential), each with its
  mechanisms and iterations; a user named twice DUPLICATE_RESOURCE, a user without credentials
  RESOURCE_NOT_FOUND, with Kafka's messages.
- Authorization first, as Kafka's: Describe needs DESCRIBE on the cluster (else the top-level
  CLUSTER_AUTHORIZATION_FAILED and one result per user asked, unnamed, all without a message),
  Alter ALTER on the cluster (else one result per user named, sorted, each
  CLUSTER_AUTHORIZATION_FAILED with a message; nothing changed)."""

from __future__ import annotations

from kafka.protocol.admin.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

from wirekafka.security.acl.authorizer import AclOperation
from wirekafka.broker.context import RequestContext
from wirekafka.jvm import java_hashmap_order
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.sasl.scram import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    TYPE_OF,
    ScramCredential,
)

DUPLICATE_ALTER = "A user credential cannot be altered twice in the same request"
DESCRIBE_DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist: "

_AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_DescribeResult = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_CredentialInfo = _DescribeResult.CredentialInfo
_CLUSTER_REFUSAL = "Cluster authorization failed."


def _name_and_mechanism(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_TYPES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _refused_alter(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    users = {d.name for d in request.deletions} | {u.name for u in request.upsertions}
    return AlterUserScramCredentialsResponse(version=ctx.version, throttle_time_ms=0, results=[
        _AlterResult(user=name, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=_CLUSTER_REFUSAL)
        for name in sorted(users)])


def _refused_describe(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    """Kafka's error answer: one unnamed result per user asked (none for a null list)."""
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return DescribeUserScramCredentialsResponse(
        version=ctx.version, throttle_time_ms=0, error_code=code, error_message=None,
        results=[_DescribeResult(user="", error_code=code, error_message=None, credential_infos=[])
                 for _ in request.users or ()])


async def handle_alter(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _refused_alter(ctx, request)
    store = ctx.state.metadata.scram
    deletions: dict[str, AlterUserScramCredentialsRequest.ScramCredentialDeletion] = {}
    upsertions: dict[str, AlterUserScramCredentialsRequest.ScramCredentialUpsertion] = {}
    errors: dict[str, tuple[ErrorCode, str]] = {}
    for deletion in request.deletions:
        name = deletion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
            continue
        error = _name_and_mechanism(name, deletion.mechanism)
        if error is None and store.get(name, MECHANISM_TYPES[deletion.mechanism]) is None:
            error = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if error is not None:
            errors[name] = error
        else:
            deletions[name] = deletion
    for upsertion in request.upsertions:
        name = upsertion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
            continue
        error = _name_and_mechanism(name, upsertion.mechanism)
        if error is None and upsertion.iterations < MIN_ITERATIONS:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif error is None and upsertion.iterations > MAX_ITERATIONS:
            error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if error is not None:
            errors[name] = error
        else:
            upsertions[name] = upsertion
    changes: dict[str, dict[str, ScramCredential]] = {}
    for name, deletion in deletions.items():
        changes.setdefault(name, store.of(name)).pop(MECHANISM_TYPES[deletion.mechanism], None)
    for name, upsertion in upsertions.items():
        mechanism = MECHANISM_TYPES[upsertion.mechanism]
        changes.setdefault(name, store.of(name))[mechanism] = ScramCredential.from_salted_password(
            mechanism, bytes(upsertion.salt), bytes(upsertion.salted_password), upsertion.iterations)
    if changes:
        await ctx.state.metadata.set_scram_credentials(changes)
    results = [_AlterResult(user=name, error_code=ErrorCode.NONE, error_message=None)
               for group in (deletions, upsertions) for name in java_hashmap_order(group)]
    results += [_AlterResult(user=name, error_code=errors[name][0], error_message=errors[name][1])
                for name in java_hashmap_order(errors)]
    return AlterUserScramCredentialsResponse(version=ctx.version, throttle_time_ms=0, results=results)


def handle_describe(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        return _refused_describe(ctx, request)
    store = ctx.state.metadata.scram
    asked = request.users
    duplicated: dict[str, bool] = {}
    if not asked:
        duplicated = {name: False for name in store.users()}
    else:
        for user in asked:
            duplicated[user.name] = user.name in duplicated
    results = []
    for name in java_hashmap_order(duplicated):
        if duplicated[name]:
            results.append(_DescribeResult(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                                           error_message=DESCRIBE_DUPLICATE + name, credential_infos=[]))
            continue
        credentials = store.of(name)
        if not credentials:
            results.append(_DescribeResult(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                           error_message=DESCRIBE_MISSING + name, credential_infos=[]))
            continue
        infos = [_CredentialInfo(mechanism=TYPE_OF[m], iterations=credentials[m].iterations)
                 for m in sorted(credentials, key=TYPE_OF.__getitem__)]
        results.append(_DescribeResult(user=name, error_code=ErrorCode.NONE, error_message="",
                                       credential_infos=infos))
    # Kafka leaves the messages it does not set at their schema default, "" (not null)
    return DescribeUserScramCredentialsResponse(version=ctx.version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                                                error_message="", results=results)
