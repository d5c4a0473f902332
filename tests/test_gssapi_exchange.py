"""GSSAPI on a SASL listener, end to end in one process: a real KDC (testsupport/kdc.py), the
broker's authenticator with its keytab, and a client built on the same MIT library acting as
Java's and Cyrus SASL's GSSAPI clients do (mutual authentication, then RFC 4752's layer
messages). Covers SaslHandshake v1 with SaslAuthenticate, v0 with bare tokens, a first token
without any handshake (Kafka 0.9 clients, refused by Kafka 4), Kafka's refusal, the short name
rules, re-authentication, and the settings a broker does not start with. Skipped without MIT's KDC (scripts/install_system_deps.sh)."""

from __future__ import annotations

import itertools
import socket
import struct
from pathlib import Path
from typing import Callable, Iterator

import pytest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from testsupport import kdc as kdc_support
from wirekafka.security.kerberos import gssapi_binding
from wirekafka.broker.replication.peer_client import PeerSecurity
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config
from wirekafka.security.kerberos.keytab_login import host_name
from wirekafka.security.sasl.gssapi import GssapiClient
from wirekafka.protocol.errors import ErrorCode
from tests.sasl_frames import answer as _answer
from tests.sasl_frames import frame as _frame
from wirekafka.server.sasl_authenticator import SaslServerAuthenticator, SaslSettings

pytestmark = pytest.mark.skipif(not (kdc_support.available() and gssapi_binding.available()),
                                reason="MIT Kerberos KDC not installed (scripts/install_system_deps.sh)")

SERVICE = "kafka/127.0.0.1"
_ccaches = itertools.count()


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kdc_support.Kdc]:
    with pytest.MonkeyPatch.context() as env, kdc_support.Kdc(tmp_path_factory.mktemp("kdc")) as realm:
        for key, value in realm.env.items():
            env.setenv(key, value)  # the library reads the realm's krb5.conf from here
        realm.keytab(SERVICE)
        yield realm


def _jaas(keytab: Path | str, principal: str = f"{SERVICE}@{kdc_support.REALM}", extra: str = "") -> str:
    return kdc_support.keytab_login(keytab, principal, extra)


def _props(jaas: str, **more: str) -> dict[str, str]:
    return {"log.dirs": "/tmp/unused", "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.service.name": "kafka",
            "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas, **more}


def _authenticator(kdc: kdc_support.Kdc, **more: str) -> SaslServerAuthenticator:
    config = build_config(_props(_jaas(kdc.directory / "kafka_127.0.0.1.keytab"), **more))
    settings = SaslSettings.of_listener(config, "SASL_PLAINTEXT")
    assert settings is not None
    return settings.authenticator("peer")


def _client(kdc: kdc_support.Kdc, user: str = "alice", service: str = SERVICE) -> gssapi_binding.InitiatorContext:
    keytab = kdc.directory / f"{user}.keytab"
    if not keytab.exists():
        kdc.keytab(user)
    credential = gssapi_binding.Credential.initiator(f"{user}@{kdc.realm}", str(keytab), f"MEMORY:c{next(_ccaches)}")
    return gssapi_binding.InitiatorContext(credential, f"{service}@{kdc.realm}")


def _sasl_client(ctx: gssapi_binding.InitiatorContext, send: Callable[[bytes], bytes | None],
                 choice: bytes = b"\x01\x00\x00\x00", authzid: bytes = b"") -> bytes | None:
    """RFC 4752's client: context tokens, then the server's offer answered with choice; the
    server's last answer."""
    answer = send(ctx.step())
    while not ctx.established:
        answer = send(ctx.step(answer or b""))
    if answer == b"":  # mutual authentication: the acceptor's last token came first
        answer = send(b"")
    assert answer
    offer, _ = ctx.unwrap(answer)
    assert offer == b"\x01\x01\x00\x00"  # no security layer, 65536 bytes, as Java's server offers
    return send(ctx.wrap(choice + authzid))


def _v1(auth: SaslServerAuthenticator, mechanism: str = "GSSAPI") -> Callable[[bytes], bytes]:
    step = auth.step(_frame(SaslHandshakeRequest(mechanism=mechanism), 1))
    assert not step.fail and _answer(step.reply, SaslHandshakeResponse, 1).mechanisms == ["GSSAPI"]

    def send(token: bytes) -> bytes:
        step = auth.step(_frame(SaslAuthenticateRequest(auth_bytes=token), 2))
        answer = _answer(step.reply, SaslAuthenticateResponse, 2)
        if answer.error_code:
            raise _Refused(answer.error_code, answer.error_message, step.fail)
        return answer.auth_bytes
    return send


def _bare(auth: SaslServerAuthenticator) -> Callable[[bytes], bytes | None]:
    def send(token: bytes) -> bytes | None:
        step = auth.step(token)
        assert not step.fail and not step.drop
        if step.reply is None:
            return None
        assert struct.unpack_from(">i", step.reply)[0] == len(step.reply) - 4
        return step.reply[4:]
    return send


class _Refused(Exception):
    def __init__(self, code: int, message: str, failed: bool) -> None:
        super().__init__(code, message, failed)
        self.code, self.message, self.failed = code, message, failed


def test_handshake_v1_then_authenticate_names_the_short_principal(kdc: kdc_support.Kdc) -> None:
    auth = _authenticator(kdc)
    assert _sasl_client(_client(kdc), _v1(auth)) == b""  # the last answer carries nothing
    assert auth.complete and auth.principal == "alice"


def test_handshake_v0_then_bare_tokens(kdc: kdc_support.Kdc) -> None:
    auth = _authenticator(kdc)
    step = auth.step(_frame(SaslHandshakeRequest(mechanism="GSSAPI"), 0))
    assert _answer(step.reply, SaslHandshakeResponse, 0).error_code == 0
    assert _sasl_client(_client(kdc, "bob"), _bare(auth)) is None  # nothing is sent after the choice
    assert auth.complete and auth.principal == "bob"


def test_a_first_token_without_handshake_fails_the_connection(kdc: kdc_support.Kdc) -> None:
    """Kafka 0.9's clients sent the GSSAPI token straight away; Kafka 4 no longer accepts that."""
    step = _authenticator(kdc).step(_client(kdc).step())
    assert step.fail and step.reply is None


def test_an_authorization_id_does_not_change_the_principal(kdc: kdc_support.Kdc) -> None:
    """Kafka's callback authorizes any authorization id and keeps the authenticated name."""
    auth = _authenticator(kdc)
    _sasl_client(_client(kdc), _v1(auth), authzid=b"admin@WIREKAFKA.TEST")
    assert auth.principal == "alice"


def test_short_names_follow_the_listeners_rules(kdc: kdc_support.Kdc) -> None:
    auth = _authenticator(kdc, **{"listener.name.sasl_plaintext.sasl.kerberos.principal.to.local.rules":
                                  "RULE:[1:$1@$0](alice@.*)s/.*/carol/,DEFAULT"})
    _sasl_client(_client(kdc), _v1(auth))
    assert auth.principal == "carol"
    # a principal no rule names: Kafka cannot build its principal and closes the connection
    auth = _authenticator(kdc, **{"sasl.kerberos.principal.to.local.rules": "RULE:[2:$1]"})
    ctx, send = _client(kdc), _v1(auth)
    assert ctx.step(send(ctx.step())) == b"" and ctx.established  # the acceptor's AP-REP
    ctx.unwrap(send(b""))  # the offer
    step = auth.step(_frame(SaslAuthenticateRequest(auth_bytes=ctx.wrap(b"\x01\x00\x00\x00")), 2))
    assert step.drop and not auth.complete


def test_a_ticket_for_keys_the_broker_does_not_have_is_refused_as_kafka_refuses_it(kdc: kdc_support.Kdc) -> None:
    old = kdc.keytab("kafka/stale", kdc.directory / "stale-old.keytab")
    kdc.keytab("kafka/stale", kdc.directory / "stale-new.keytab")  # new keys: tickets are for those
    config = build_config(_props(_jaas(old, f"kafka/stale@{kdc.realm}", " isInitiator=false")))  # no start-up login
    settings = SaslSettings.of_listener(config, "SASL_PLAINTEXT")
    assert settings is not None
    with pytest.raises(_Refused) as refused:
        _sasl_client(_client(kdc, service="kafka/stale"), _v1(settings.authenticator("peer")))
    assert (refused.value.code, refused.value.message, refused.value.failed) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI", True)


def test_a_layer_the_server_did_not_offer_is_refused(kdc: kdc_support.Kdc) -> None:
    with pytest.raises(_Refused) as refused:
        _sasl_client(_client(kdc), _v1(_authenticator(kdc)), choice=b"\x04\x00\x10\x00")  # privacy
    assert refused.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_garbage_is_refused(kdc: kdc_support.Kdc) -> None:
    send = _v1(_authenticator(kdc))
    with pytest.raises(_Refused) as refused:
        send(b"\x60\x03not a token")
    assert refused.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


@pytest.mark.parametrize("change, message", [
    ({"sasl.kerberos.service.name": ""}, "No serviceName defined in either JAAS or Kafka config"),
    ({"jaas_extra": ' serviceName="other"'},
     "Conflicting serviceName values found in JAAS and Kafka configs value in JAAS file other, value in Kafka "
     "config kafka"),
    ({"sasl.kerberos.principal.to.local.rules": "NOPE"}, "Invalid rule: NOPE"),
    ({"principal": f"kafka/elsewhere@{kdc_support.REALM}"},
     "javax.security.auth.login.LoginException: Could not login: the client is being asked for a password"),
    ({"keytab": "/nonexistent.keytab"}, "javax.security.auth.login.LoginException: Could not login"),
])
def test_settings_a_broker_does_not_start_with(kdc: kdc_support.Kdc, change: dict[str, str], message: str) -> None:
    change = dict(change)
    jaas = _jaas(change.pop("keytab", kdc.directory / "kafka_127.0.0.1.keytab"),
                 change.pop("principal", f"{SERVICE}@{kdc.realm}"), change.pop("jaas_extra", ""))
    with pytest.raises(ConfigError) as err:
        build_config(_props(jaas, **change))
    assert str(err.value).startswith(message)


def test_the_principal_may_leave_out_the_default_realm(kdc: kdc_support.Kdc) -> None:
    config = build_config(_props(_jaas(kdc.directory / "kafka_127.0.0.1.keytab", SERVICE)))
    assert config.kerberos_login("SASL_PLAINTEXT").principal == f"{SERVICE}@{kdc.realm}"


def test_a_replayed_token_closes_the_connection_unanswered(kdc: kdc_support.Kdc) -> None:
    """A replay is one of the Kerberos errors Kafka takes as transient: no answer, the client retries."""
    token = _client(kdc).step()
    first = _authenticator(kdc)
    _v1(first)
    assert not first.step(_frame(SaslAuthenticateRequest(auth_bytes=token), 2)).fail
    second = _authenticator(kdc)
    _v1(second)
    assert second.step(_frame(SaslAuthenticateRequest(auth_bytes=token), 2)).drop


def test_re_authentication_keeps_the_principal(kdc: kdc_support.Kdc) -> None:
    auth = _authenticator(kdc, **{"connections.max.reauth.ms": "60000"})
    _sasl_client(_client(kdc), _v1(auth))
    assert auth.complete and auth.expires_at is not None
    assert auth.begin_reauthentication()
    _sasl_client(_client(kdc), _v1(auth))
    assert auth.complete and auth.principal == "alice"
    auth._reauth_started -= 2  # Kafka allows a re-authentication a second after the last
    assert auth.begin_reauthentication()
    with pytest.raises(_Refused) as refused:
        _sasl_client(_client(kdc, "bob"), _v1(auth))
    assert refused.value.message == "Cannot change principals during re-authentication from User.alice: User.bob"


def test_a_broker_whose_keys_the_kdc_no_longer_has_does_not_start(kdc: kdc_support.Kdc) -> None:
    """Krb5LoginModule logs in at start-up unless isInitiator=false, as Kafka's broker does."""
    stale = kdc.keytab("kafka/rekeyed", kdc.directory / "rekeyed-old.keytab")
    kdc.keytab("kafka/rekeyed", kdc.directory / "rekeyed-new.keytab")
    principal = f"kafka/rekeyed@{kdc.realm}"
    with pytest.raises(ConfigError, match="javax.security.auth.login.LoginException: "):
        build_config(_props(_jaas(stale, principal)))
    build_config(_props(_jaas(stale, principal, " isInitiator=false")))


def test_the_client_side_logs_in_as_kafkas_inter_broker_client_does(kdc: kdc_support.Kdc) -> None:
    """sasl_gssapi.GssapiClient (a broker logging in to another) against the broker's authenticator."""
    for version in (1, 0):
        auth = _authenticator(kdc)
        if version == 1:
            send = _v1(auth)
        else:
            assert not auth.step(_frame(SaslHandshakeRequest(mechanism="GSSAPI"), 0)).fail
            send = _bare(auth)
        client = GssapiClient(_client(kdc, "bob"), authorization_id=f"bob@{kdc.realm}")
        tokens, answer = 0, None
        while not client.complete:
            answer = send(client.evaluate(answer or b""))
            tokens += 1
        assert tokens == 3  # the AP-REQ, the empty token asking for the offer, the choice
        assert answer == (b"" if version == 1 else None)
        assert auth.complete and auth.principal == "bob"


def test_an_address_is_named_by_its_host_name_as_java_names_it() -> None:
    assert host_name("localhost") == "localhost"
    assert host_name("127.0.0.1") == socket.gethostbyaddr("127.0.0.1")[0]
    assert host_name("192.0.2.1") in ("192.0.2.1", socket.getfqdn("192.0.2.1"))  # no name: the address itself


def test_a_zookeeper_broker_logs_in_to_the_others_with_its_listeners_keys(kdc: kdc_support.Kdc) -> None:
    """sasl.mechanism.inter.broker.protocol=GSSAPI (Kafka's default) on a SASL inter-broker
    listener: the broker starts, and its peers' connections log in with that listener's login."""
    config = build_config(_props(_jaas(kdc.directory / "kafka_127.0.0.1.keytab"),
                                 **{"zookeeper.connect": "127.0.0.1:1", "broker.id": "1",
                                    "inter.broker.listener.name": "SASL_PLAINTEXT"}))
    sasl = PeerSecurity.of(config).sasl
    assert sasl is not None and sasl.mechanism == "GSSAPI"
    assert sasl.kerberos is not None
    assert (sasl.kerberos.principal, sasl.kerberos.keytab, sasl.kerberos.service_name) == (
        f"{SERVICE}@{kdc.realm}", str(kdc.directory / "kafka_127.0.0.1.keytab"), "kafka")
