"""The users' SCRAM credentials as the cluster metadata keeps them: per user and mechanism, the
salt, iteration count and derived keys (never a password). Single node: in the topics file beside
the dynamic broker configs; ZooKeeper: /config/users/<user> as Kafka 3.9 writes it, each
mechanism's credential in Kafka's text form under the mechanism's name."""

from __future__ import annotations

import logging
from typing import Mapping

from wirekafka.security.sasl.scram import MECHANISMS, ScramCredential

log = logging.getLogger(__name__)


class ScramCredentials:
    def __init__(self) -> None:
        self._by_user: dict[str, dict[str, ScramCredential]] = {}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._by_user.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        """user -> mechanism -> credential, for every user with one."""
        return {user: dict(mechs) for user, mechs in self._by_user.items() if mechs}

    def of(self, user: str) -> dict[str, ScramCredential]:
        return dict(self._by_user.get(user, {}))

    def replace(self, user: str, credentials: Mapping[str, ScramCredential]) -> None:
        """A user's credentials from now on (none: the user has none)."""
        if credentials:
            self._by_user[user] = dict(credentials)
        else:
            self._by_user.pop(user, None)

    def encoded(self, user: str) -> dict[str, str]:
        """A user's credentials in Kafka's stored form, mechanism -> text."""
        return {mech: cred.encode() for mech, cred in self._by_user.get(user, {}).items()}

    def snapshot(self) -> dict[str, dict[str, str]]:
        return {user: self.encoded(user) for user in sorted(self._by_user)}

    def load(self, saved: Mapping[str, Mapping[str, str]]) -> None:
        """Every user's credentials from their stored form (a user's config: other keys, such as
        quotas Kafka keeps there, are not credentials and are skipped)."""
        self._by_user = {}
        for user, configs in saved.items():
            credentials = {}
            for mechanism, text in configs.items():
                if mechanism not in MECHANISMS:
                    continue
                try:
                    credentials[mechanism] = ScramCredential.decode(text)
                except (KeyError, ValueError) as exc:
                    log.warning("ignoring the %s credential of user %s: %s", mechanism, user, exc)
            self.replace(user, credentials)
