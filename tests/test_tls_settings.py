"""TLS settings (wirekafka/security/tls.py through the broker config): the stores Kafka's ssl.* keys name,
in PKCS12 and PEM, per listener or for all; the versions, client authentication and hostname
checks they ask for; and start-up refusals that say what to change. Stores are made here with
`cryptography`; keytool-made ones are used by the client and conformance tests."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from testsupport.self_signed import PASSWORD, make_stores
from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stores(tmp_path_factory.mktemp("tls"))


def _ssl(stores: Path, **extra: str) -> dict[str, str]:
    return {"log.dirs": "/tmp/unused", "listeners": "SSL://127.0.0.1:9093", "security.inter.broker.protocol": "SSL",
            "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(stores / "broker.p12"),
            "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(stores / "cert.pem"), **extra}


def _refused(props: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as err:
        build_config(props)
    return str(err.value)


def test_pkcs12_key_store_and_pem_trust_store(stores: Path) -> None:
    cfg = build_config(_ssl(stores))
    server = cfg.tls_context("SSL", server=True)
    assert server.verify_mode == ssl.CERT_NONE  # ssl.client.auth=none
    assert (server.minimum_version, server.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    client = cfg.tls_context("SSL", server=False)
    assert client.check_hostname and client.verify_mode == ssl.CERT_REQUIRED  # endpoint identification https
    # a JKS-typed store that is a PKCS12 file loads, as Java's JKS type loads one
    build_config(_ssl(stores, **{"ssl.keystore.type": "JKS"}))


def test_pem_key_stores_from_a_file_or_inline(stores: Path) -> None:
    build_config(_ssl(stores, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(stores / "chain-and-key.pem")}))
    inline = {"ssl.keystore.type": "PEM", "ssl.keystore.location": "",
              "ssl.keystore.certificate.chain": (stores / "cert.pem").read_text(),
              "ssl.keystore.key": (stores / "encrypted-key.pem").read_text(), "ssl.key.password": PASSWORD,
              "ssl.truststore.certificates": (stores / "cert.pem").read_text()}
    build_config(_ssl(stores, **inline))


def test_versions_client_auth_and_hostname_checks(stores: Path) -> None:
    cfg = build_config(_ssl(stores, **{"ssl.enabled.protocols": "TLSv1.3", "ssl.client.auth": "required",
                                       "ssl.endpoint.identification.algorithm": ""}))
    server = cfg.tls_context("SSL", server=True)
    assert server.minimum_version == ssl.TLSVersion.TLSv1_3 and server.verify_mode == ssl.CERT_REQUIRED
    assert not cfg.tls_context("SSL", server=False).check_hostname
    requested = build_config(_ssl(stores, **{"ssl.client.auth": "requested"})).tls_context("SSL", server=True)
    assert requested.verify_mode == ssl.CERT_OPTIONAL


def test_a_listeners_own_settings_win(stores: Path) -> None:
    props = _ssl(stores, **{"ssl.keystore.location": "/nonexistent.p12",
                            "listener.name.ssl.ssl.keystore.location": str(stores / "broker.p12"),
                            "listener.name.ssl.ssl.client.auth": "required"})
    assert build_config(props).tls_context("SSL", server=True).verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize("extra, message", [
    ({"ssl.keystore.location": ""}, "listener SSL: an SSL listener needs a key store"),
    ({"ssl.keystore.password": "wrong"}, "listener SSL: cannot read the key store"),
    ({"ssl.keystore.location": "/nonexistent.p12"}, "listener SSL: ssl.keystore.location=/nonexistent.p12: "
                                                     "No such file or directory"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "listener SSL: ssl.enabled.protocols=TLSv1.1: wirekafka serves TLSv1.2 "
                                           "and TLSv1.3"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "listener SSL: ssl.cipher.suites is set"),
    ({"ssl.client.auth": "always"}, "listener SSL: Invalid value always for configuration ssl.client.auth"),
    ({"ssl.keystore.type": "BKS"}, "listener SSL: ssl.keystore.type=BKS"),
])
def test_settings_wirekafka_cannot_act_on_stop_start_up(stores: Path, extra: dict[str, str], message: str) -> None:
    assert _refused(_ssl(stores, **extra)).startswith(message)


def test_a_true_jks_store_is_refused_with_the_conversion_to_make(stores: Path) -> None:
    message = _refused(_ssl(stores, **{"ssl.keystore.location": str(stores / "legacy.jks")}))
    assert "is a JKS key store, a JVM-only format: convert it with keytool -importkeystore" in message
