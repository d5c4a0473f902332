"""Kafka 3.9's encoding of dynamic password configs, as it keeps them in ZooKeeper.

A ZooKeeper-mode Kafka broker never writes a dynamically set password (a listener's
ssl.keystore.password, ...) to /config/brokers/<id> in clear: it encrypts it with a key derived
from password.encoder.secret and stores the ciphertext with everything needed to decrypt it
(EncryptingPasswordEncoder). wirekafka brokers share those znodes with Kafka's tools and brokers,
so they write and read the same text:
- the key: PBKDF2 (password.encoder.keyfactory.algorithm; unset, Kafka's JVM picks
  PBKDF2WithHmacSHA512, which every JVM and this module have) over the secret's UTF-8 bytes, a
  fresh random 256-byte salt, password.encoder.iterations rounds, password.encoder.key.length bits;
- the cipher: password.encoder.cipher.algorithm, AES/CBC/PKCS5Padding by default (a random
  16-byte IV) or AES/GCM/NoPadding (a random 12-byte IV, a 128-bit tag). Kafka accepts any JCE
  name; the others (ECB has no IV, which Kafka's encoder cannot store either) are refused;
- the text: "name:value" fields joined by "," in the order a Java HashMap lists them (the
  JVM's String hashes), binary fields in standard base64, passwordLength in UTF-16 units as
  Java's String.length() counts them. Decoding reads the parameters from the text, not from
  this broker's settings, as Kafka does, and checks the length.
Decoding needs the key derivation (a few milliseconds at 4096 rounds): callers cache results."""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from wirekafka.jvm import java_hashmap_order

DEFAULT_KEY_FACTORY = "PBKDF2WithHmacSHA512"
CBC = "AES/CBC/PKCS5Padding"
GCM = "AES/GCM/NoPadding"
SUPPORTED_CIPHERS = (CBC, GCM)
#: The dynamic broker configs of Kafka's PASSWORD type (DynamicBrokerConfig.DynamicPasswordConfigs):
#: a key is a password config when it ends with one of them (a listener prefix before it).
PASSWORD_CONFIGS = ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "ssl.keystore.key",
                    "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "sasl.jaas.config")
_KEY_FACTORIES = {"PBKDF2WithHmacSHA1": hashes.SHA1, "PBKDF2WithHmacSHA224": hashes.SHA224,
                  "PBKDF2WithHmacSHA256": hashes.SHA256, "PBKDF2WithHmacSHA384": hashes.SHA384,
                  "PBKDF2WithHmacSHA512": hashes.SHA512}
_UPPER = {c.upper(): c for c in SUPPORTED_CIPHERS}
_SALT_BYTES = 256
_GCM_IV_BYTES, _GCM_TAG_BITS = 12, 128
_CSV_SPLIT = re.compile(r"\s*,\s*")


SECRET_NOT_CONFIGURED = "Password encoder secret not configured"


class PasswordConfigError(ValueError):
    """Kafka's ConfigException when a password config is stored without an encoder (the text is
    Kafka's): the request's INVALID_CONFIG."""


class PasswordDecodeError(ValueError):
    """An encoded password this secret cannot decode (Kafka: "Password could not be decoded")."""


def is_password_config(name: str) -> bool:
    """Kafka's DynamicBrokerConfig.isPasswordConfig: the name ends with a password key."""
    return any(name.endswith(key) for key in PASSWORD_CONFIGS)


def cipher_supported(cipher: str) -> bool:
    """Whether a password.encoder.cipher.algorithm is one this module implements (JCE names
    are case-insensitive)."""
    return cipher.upper() in _UPPER


def key_factory_supported(name: str) -> bool:
    """Whether a password.encoder.keyfactory.algorithm is one this module implements."""
    return name in _KEY_FACTORIES


@dataclass(frozen=True)
class PasswordEncoder:
    """Kafka's EncryptingPasswordEncoder with one broker's password.encoder.* settings
    (key_factory None: Kafka's default)."""
    secret: str
    key_factory: str | None = None
    cipher: str = CBC
    key_length: int = 128
    iterations: int = 4096

    def encode(self, password: str, salt: bytes | None = None, iv: bytes | None = None) -> str:
        """The stored form of a password (salt and IV random unless given, as tests give them)."""
        cipher = _UPPER.get(self.cipher.upper())
        if cipher is None:
            raise ValueError(f"password.encoder.cipher.algorithm {self.cipher} is not available in wirekafka")
        factory = self.key_factory or DEFAULT_KEY_FACTORY
        salt = os.urandom(_SALT_BYTES) if salt is None else salt
        key = self._key(factory, self.key_length, salt, self.iterations)
        plain = password.encode("utf-8")
        params: dict[str, str]
        if cipher == GCM:
            iv = os.urandom(_GCM_IV_BYTES) if iv is None else iv
            encrypted = AESGCM(key).encrypt(iv, plain, None)
            params = {"initializationVector": _b64(iv), "authenticationTagLength": str(_GCM_TAG_BITS)}
        else:
            iv = os.urandom(16) if iv is None else iv
            padder = padding.PKCS7(128).padder()
            encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            encrypted = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
            params = {"initializationVector": _b64(iv)}
        fields = {"keyFactoryAlgorithm": factory, "cipherAlgorithm": self.cipher, "keyLength": str(self.key_length),
                  "salt": _b64(salt), "iterations": str(self.iterations), "encryptedPassword": _b64(encrypted),
                  "passwordLength": str(_java_length(password))}
        # the cipher parameters come from their own HashMap, put last (putAll)
        fields.update({k: params[k] for k in java_hashmap_order(params)})
        return ",".join(f"{k}:{fields[k]}" for k in java_hashmap_order(fields))

    def decode(self, encoded: str) -> str:
        """The password an encoded value holds; PasswordDecodeError when it cannot be read."""
        try:
            params = _parse_csv_map(encoded)
            factory = params.get("keyFactoryAlgorithm") or DEFAULT_KEY_FACTORY
            cipher = _UPPER.get(params["cipherAlgorithm"].upper())
            key = self._key(factory, int(params["keyLength"]), base64.b64decode(params["salt"], validate=True),
                            int(params["iterations"]))
            encrypted = base64.b64decode(params["encryptedPassword"], validate=True)
            iv = base64.b64decode(params["initializationVector"], validate=True)
            if cipher == GCM:
                if int(params["authenticationTagLength"]) != _GCM_TAG_BITS:
                    raise ValueError("unsupported GCM tag length")
                plain = AESGCM(key).decrypt(iv, encrypted, None)
            elif cipher == CBC:
                decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
                unpadder = padding.PKCS7(128).unpadder()
                padded = decryptor.update(encrypted) + decryptor.finalize()
                plain = unpadder.update(padded) + unpadder.finalize()
            else:
                raise ValueError(f"cipher {params['cipherAlgorithm']} is not available in wirekafka")
            password, length = plain.decode("utf-8"), int(params["passwordLength"])
        except Exception as exc:  # any failure (a field, base64, padding, tag) is Kafka's one ConfigException
            raise PasswordDecodeError(f"Password could not be decoded: {exc!r}") from None
        if _java_length(password) != length:
            raise PasswordDecodeError("Password could not be decoded, sanity check of length failed")
        return password

    def _key(self, factory: str, bits: int, salt: bytes, iterations: int) -> bytes:
        algorithm = _KEY_FACTORIES.get(factory)
        if algorithm is None:
            raise ValueError(f"{factory} SecretKeyFactory not available")
        return PBKDF2HMAC(algorithm=algorithm(), length=bits // 8, salt=salt,
                          iterations=iterations).derive(self.secret.encode("utf-8"))


def _parse_csv_map(text: str) -> dict[str, str]:
    """Kafka's Csv.parseCsvMap: entries split around commas, each at its last colon."""
    out = {}
    for entry in _CSV_SPLIT.split(text):
        name, _, value = entry.rpartition(":")
        out[name.strip()] = value.strip()
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2
