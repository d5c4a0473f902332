"""Kafka 3.9's dynamic-password encoding (broker/password_encoder.py) and the ZooKeeper-mode
broker's use of it for /config/brokers/<entity> (broker/replication/zk_broker_passwords.py).

tests/data/kafka39_encoded_passwords.json holds values encoded once by Kafka 3.9.1's own
EncryptingPasswordEncoder (compat-tests/java/PasswordCodec.java, run with the cached 3.9.1 jars;
the file names the command): they must decode, and encoding the same password with the same
salt and IV must give the same text, byte for byte."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from wirekafka.security.password_encoder import (
    PasswordConfigError,
    PasswordDecodeError,
    PasswordEncoder,
    cipher_supported,
    is_password_config,
)
from wirekafka.broker.metadata.zk.broker_passwords import BrokerPasswords
from wirekafka.config.loader import build_config

FIXTURE = Path(__file__).parent / "data" / "kafka39_encoded_passwords.json"
KAFKA_VALUES = json.loads(FIXTURE.read_text())["values"]
STORE_PASSWORD = "listener.name.ssl.ssl.keystore.password"


def _fields(encoded: str) -> dict[str, str]:
    return dict(entry.rsplit(":", 1) for entry in encoded.split(","))


@pytest.mark.parametrize("value", KAFKA_VALUES, ids=[v["cipher"] for v in KAFKA_VALUES])
def test_values_encoded_by_kafka_decode_and_encode_identically(value: dict) -> None:
    encoder = PasswordEncoder(value["secret"], None, value["cipher"], value["key_length"], value["iterations"])
    assert encoder.decode(value["encoded"]) == value["password"]
    fields = _fields(value["encoded"])
    again = encoder.encode(value["password"], salt=base64.b64decode(fields["salt"]),
                           iv=base64.b64decode(fields["initializationVector"]))
    assert again == value["encoded"]


def test_encoding_is_random_and_reads_its_parameters_from_the_text() -> None:
    encoder = PasswordEncoder("secret", iterations=1024)
    first, second = encoder.encode("pw"), encoder.encode("pw")
    assert first != second and _fields(first)["salt"] != _fields(second)["salt"]
    assert len(base64.b64decode(_fields(first)["salt"])) == 256
    assert list(_fields(first)) == ["initializationVector", "keyLength", "salt", "keyFactoryAlgorithm",
                                    "cipherAlgorithm", "iterations", "passwordLength", "encryptedPassword"]
    # another broker's key length and iteration count do not matter: the text carries them
    assert PasswordEncoder("secret", key_length=256, iterations=5000).decode(first) == "pw"


def test_wrong_secret_or_damaged_text_does_not_decode() -> None:
    encoded = PasswordEncoder("secret", iterations=1024).encode("pw")
    with pytest.raises(PasswordDecodeError):
        PasswordEncoder("other", iterations=1024).decode(encoded)
    with pytest.raises(PasswordDecodeError):
        PasswordEncoder("secret").decode(encoded.replace("passwordLength:2", "passwordLength:3"))
    with pytest.raises(PasswordDecodeError):
        PasswordEncoder("secret").decode("not an encoded password")


def test_which_keys_are_passwords_and_which_ciphers_are_served() -> None:
    assert is_password_config(STORE_PASSWORD) and is_password_config("listener.name.ssl.ssl.truststore.certificates")
    assert not is_password_config("listener.name.ssl.ssl.keystore.location")
    assert cipher_supported("AES/CBC/PKCS5Padding") and cipher_supported("aes/gcm/nopadding")
    assert not cipher_supported("AES/ECB/PKCS5Padding")
    assert BrokerPasswords.unsupported(build_config({"password.encoder.cipher.algorithm": "DES"})) == (
        "password.encoder.cipher.algorithm=DES is not available in wirekafka")


def test_stored_passwords_are_encoded_and_decoded_per_entity(caplog: pytest.LogCaptureFixture) -> None:
    passwords = BrokerPasswords(build_config({"password.encoder.secret": "s1", "password.encoder.iterations": "1024"}))
    stored = passwords.persistent("1", {STORE_PASSWORD: "pw", "log.retention.ms": "5"})
    assert stored["log.retention.ms"] == "5" and stored[STORE_PASSWORD] != "pw"
    assert PasswordEncoder("s1").decode(stored[STORE_PASSWORD]) == "pw"
    assert passwords.decoded("1", stored) == {STORE_PASSWORD: "pw", "log.retention.ms": "5"}
    # a broker with another secret leaves the password out and says so
    other = BrokerPasswords(build_config({"password.encoder.secret": "s2"}))
    with caplog.at_level(logging.ERROR, logger="wirekafka.broker.metadata.zk.broker_passwords"):
        assert other.decoded("1", stored) == {"log.retention.ms": "5"}
    assert caplog.records[0].getMessage() == (
        f"/config/brokers/1: dynamic password config {STORE_PASSWORD} could not be decoded, ignoring")


def test_storing_a_password_without_a_secret_is_kafkas_config_error() -> None:
    passwords = BrokerPasswords(build_config({}))
    assert passwords.persistent("1", {"log.retention.ms": "5"}) == {"log.retention.ms": "5"}
    with pytest.raises(PasswordConfigError, match="^Password encoder secret not configured$"):
        passwords.persistent("1", {STORE_PASSWORD: "pw"})


def test_old_secret_passwords_are_encoded_again_with_the_new_one() -> None:
    old = PasswordEncoder("old", iterations=1024)
    stored = {STORE_PASSWORD: old.encode("pw"), "listener.name.ssl.ssl.key.password": "garbage",
              "log.retention.ms": "5"}
    passwords = BrokerPasswords(build_config({"password.encoder.secret": "new",
                                              "password.encoder.old.secret": "old"}))
    rewritten = passwords.reencoded(stored)
    assert rewritten is not None and PasswordEncoder("new").decode(rewritten[STORE_PASSWORD]) == "pw"
    assert rewritten["listener.name.ssl.ssl.key.password"] == "garbage"  # not the old secret's: kept as it is
    assert rewritten["log.retention.ms"] == "5"
    assert BrokerPasswords(build_config({"password.encoder.secret": "new"})).reencoded(stored) is None
    assert passwords.reencoded({"log.retention.ms": "5"}) is None
    with pytest.raises(PasswordConfigError):
        BrokerPasswords(build_config({"password.encoder.old.secret": "old"})).reencoded(stored)
