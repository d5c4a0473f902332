"""ZooKeeper servers that authenticate their clients, for the ``zookeeper.set.acl=true`` tests: a
broker that sets ACLs needs an authenticated ZooKeeper session (Kafka 3.9 refuses to start
without one), and the ACLs it sets name that session's id. All three servers run the real ZooKeeper
3.8.4 of ``scripts/zookeeper.py`` (the version Kafka 3.9 ships) in one work directory.

- :class:`SaslZooKeeper`: SASL DIGEST-MD5, the mechanism of ZooKeeper's own ``DigestLoginModule``
  (users and passwords in the server's JAAS ``Server`` section, no Kerberos). Nothing is
  required: an anonymous client still connects, which is what lets a test try an anonymous
  write. A broker logs in with a JAAS ``Client`` section named by
  ``-Djava.security.auth.login.config`` in ``KAFKA_OPTS`` (:meth:`SaslZooKeeper.kafka_opts`);
  its id is then ``sasl:<user>``.
- :class:`TlsZooKeeper`: a TLS port that requires a client certificate (``ssl.clientAuth=need``)
  with the X509 authentication provider, beside the plain port for anonymous clients. A broker
  connects with Kafka's ``zookeeper.ssl.*`` settings (:meth:`TlsZooKeeper.broker_settings`); its
  id is ``x509:<its certificate's subject DN>``.
- :class:`KerberosZooKeeper`: SASL with GSSAPI against a test KDC (``testsupport/kdc.py``), the
  server being ``zookeeper/localhost`` (ZooKeeper's Java client asks for a ticket to
  ``zookeeper/<the canonical host name of the address>``, and 127.0.0.1's is localhost). A broker
  logs in with a Krb5LoginModule ``Client`` section and its keytab (:meth:`KerberosZooKeeper.kafka_opts`,
  :meth:`KerberosZooKeeper.env`); its id is ``sasl:<full principal>``. kazoo speaks GSSAPI only
  with the ``kerberos`` package, which the tests do without: their reader is a digest super user
  instead, whom ZooKeeper lets past every ACL check (getACL included).

The key and trust stores are ``testsupport/tls_material.py``'s: the server presents broker.p12
(CN=localhost with SAN IP:127.0.0.1, so a client verifying the host name of 127.0.0.1 accepts
it) and trusts truststore.p12; the Kafka broker presents client.p12 (CN=client), which is also
the certificate kazoo has in PEM, so a test's kazoo over TLS holds the broker's very id and may
read every ACL the broker set (reading ACLs needs READ or ADMIN permission, and a few znodes
grant nothing to anyone else).

Clients from :meth:`kazoo` are started, and stopped by :meth:`stop` (or leaving ``with``)."""

from __future__ import annotations

import base64
import hashlib
import shlex
from pathlib import Path
from typing import Mapping, Self

from kazoo.client import KazooClient

from scripts import zookeeper
from testsupport.kdc import Kdc, keytab_login
from testsupport.tls_material import PASSWORD, TlsMaterial, make as make_tls_material

#: The DIGEST-MD5 users a SaslZooKeeper knows: a broker's and a second, unrelated one.
USERS = {"kafka": "kafka-secret", "admin": "admin-secret"}
#: The principal (without the realm) the Kerberos tests' brokers log in to ZooKeeper as.
BROKER_PRINCIPAL = "kafka/localhost"
#: KerberosZooKeeper's digest super user, as ``user:password`` (kazoo's ``digest`` auth data).
SUPER_USER = "super:super-secret"
#: Kafka 3.9's ``zookeeper.connection.timeout.ms`` is 18 s; a test client waits as long at most.
CONNECT_TIMEOUT = 18.0


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _ZooKeeperWithClients:
    """A ZooKeeperServer and the kazoo clients handed out for it (stopped with it)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # scripts/zookeeper.py's ZooKeeperServer, made by the first start() so that a subclass
        # writes its files then
        self.server: zookeeper.ZooKeeperServer | None = None
        self._clients: list[KazooClient] = []

    def _make_server(self) -> zookeeper.ZooKeeperServer:
        raise NotImplementedError

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:<port>"``: the plain port (anonymous or SASL clients)."""
        if self.server is None:
            raise RuntimeError(f"{type(self).__name__} not started")
        return self.server.connect_string

    def start(self, timeout: float = 30.0) -> Self:
        """Start the server (the same port and data again after stop())."""
        if self.server is None:
            self.server = self._make_server()
        self.server.start(timeout=timeout)
        return self

    def stop(self) -> None:
        """Stop the clients from :meth:`kazoo`, then the server."""
        for client in self._clients:
            client.stop()
            client.close()
        self._clients.clear()
        if self.server is not None:
            self.server.stop()

    def _started(self, client: KazooClient) -> KazooClient:
        self._clients.append(client)  # before start(): a failed start still gets closed
        client.start(timeout=CONNECT_TIMEOUT)
        return client

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SaslZooKeeper(_ZooKeeperWithClients):
    """ZooKeeper accepting SASL DIGEST-MD5 logins of ``users`` (name -> password), and anonymous
    clients; work files in ``directory`` (server_jaas.conf, client-<user>.jaas, zk/)."""

    def __init__(self, directory: Path, users: Mapping[str, str] = USERS) -> None:
        super().__init__(directory)
        self.users = dict(users)

    def _make_server(self) -> zookeeper.ZooKeeperServer:
        entries = "".join(f"\n  user_{name}={_jaas_quote(password)}" for name, password in self.users.items())
        server_jaas = self.directory / "server_jaas.conf"
        server_jaas.write_text(f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required"
                               f"{entries};\n}};\n")
        return zookeeper.ZooKeeperServer(
            self.directory / "zk",
            settings={"authProvider.sasl": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
            jvm_opts=[f"-Djava.security.auth.login.config={server_jaas}"])

    def client_jaas_file(self, user: str) -> Path:
        """A JAAS file whose ``Client`` section (the one ZooKeeper's Java client reads) logs in as
        ``user`` with DIGEST-MD5."""
        path = self.directory / f"client-{user}.jaas"
        path.write_text(f"Client {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                        f"  username={_jaas_quote(user)}\n  password={_jaas_quote(self.users[user])};\n}};\n")
        return path

    def kafka_opts(self, user: str) -> str:
        """``KAFKA_OPTS`` for a broker that logs in to this ZooKeeper as ``user``."""
        return shlex.quote(f"-Djava.security.auth.login.config={self.client_jaas_file(user)}")

    def acl_id(self, user: str) -> tuple[str, str]:
        """The ACL id ZooKeeper gives a session logged in as ``user``: ``("sasl", user)``."""
        return ("sasl", user)

    def kazoo(self, chroot: str = "", user: str | None = None) -> KazooClient:
        """A started kazoo client on ``chroot``: logged in as ``user``, or anonymous."""
        sasl = None if user is None else {"mechanism": "DIGEST-MD5", "username": user,
                                          "password": self.users[user]}
        return self._started(KazooClient(hosts=self.connect_string + chroot, timeout=10.0, sasl_options=sasl))


class TlsZooKeeper(_ZooKeeperWithClients):
    """ZooKeeper with a TLS port requiring client certificates (X509 authentication) and a plain
    port; work files in ``directory`` (zk/, and tls/ for the stores unless ``material`` is
    given)."""

    def __init__(self, directory: Path, material: TlsMaterial | None = None) -> None:
        super().__init__(directory)
        self.material = material or make_tls_material(self.directory / "tls")

    def _make_server(self) -> zookeeper.ZooKeeperServer:
        m = self.material
        return zookeeper.ZooKeeperServer(self.directory / "zk", secure=True, settings={
            "ssl.keyStore.location": m.keystore, "ssl.keyStore.password": PASSWORD, "ssl.keyStore.type": "PKCS12",
            "ssl.trustStore.location": m.truststore, "ssl.trustStore.password": PASSWORD,
            "ssl.trustStore.type": "PKCS12", "ssl.clientAuth": "need",
            "authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider"})

    @property
    def secure_connect_string(self) -> str:
        """``"127.0.0.1:<secureClientPort>"``: a broker's ``zookeeper.connect`` (plus a chroot)."""
        if self.server is None:
            raise RuntimeError("TlsZooKeeper not started")
        return self.server.secure_connect_string

    def broker_settings(self) -> dict[str, str]:
        """server.properties entries that make a Kafka 3.9 broker talk TLS to this ZooKeeper and
        present client.p12 (so its ACL id is :meth:`broker_acl_id`); ``zookeeper.connect`` must
        name :attr:`secure_connect_string`. Netty is ZooKeeper's only client socket with TLS."""
        m = self.material
        return {"zookeeper.ssl.client.enable": "true",
                "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
                "zookeeper.ssl.keystore.location": str(m.client_keystore),
                "zookeeper.ssl.keystore.password": PASSWORD, "zookeeper.ssl.keystore.type": "PKCS12",
                "zookeeper.ssl.truststore.location": str(m.truststore),
                "zookeeper.ssl.truststore.password": PASSWORD, "zookeeper.ssl.truststore.type": "PKCS12"}

    def broker_acl_id(self) -> tuple[str, str]:
        """The ACL id ZooKeeper's X509 provider gives the broker of :meth:`broker_settings`: its
        certificate's subject DN, ``("x509", "CN=client")``."""
        return ("x509", "CN=client")

    def kazoo(self, chroot: str = "", tls: bool = True) -> KazooClient:
        """A started kazoo client on ``chroot``: over TLS with client.pem (the broker's id, see
        the module docstring), or anonymous on the plain port."""
        if not tls:
            return self._started(KazooClient(hosts=self.connect_string + chroot, timeout=10.0))
        m = self.material
        return self._started(KazooClient(hosts=self.secure_connect_string + chroot, timeout=10.0, use_ssl=True,
                                          certfile=str(m.client_pem), keyfile=str(m.client_key),
                                          ca=str(m.broker_pem)))


class KerberosZooKeeper(_ZooKeeperWithClients):
    """ZooKeeper accepting SASL GSSAPI logins of ``kdc``'s principals, anonymous clients and the
    digest super user :data:`SUPER_USER`; work files in ``directory`` (server_jaas.conf,
    zookeeper_localhost.keytab, client-<principal>.jaas and <principal>.keytab, zk/).

    ZooKeeper's own defaults stay as Kafka users run them: ``kerberos.removeHostFromPrincipal``
    and ``kerberos.removeRealmFromPrincipal`` are false, so a client's id is its whole principal.
    Principals are named without the realm, as :meth:`Kdc.keytab` takes them (``"kafka/localhost"``).
    Exporting a keytab gives a principal new keys, so each principal's keytab is exported once
    here and reused; another export of the same principal (KerberosRealm's, say) would void it."""

    def __init__(self, directory: Path, kdc: Kdc) -> None:
        super().__init__(directory)
        self.kdc = kdc
        self._keytabs: dict[str, Path] = {}

    def _keytab(self, principal: str) -> Path:
        if principal not in self._keytabs:
            path = self.directory / f"{principal.replace('/', '_')}.keytab"
            self._keytabs[principal] = self.kdc.keytab(principal, path)
        return self._keytabs[principal]

    def _jaas_file(self, path: Path, section: str, principal: str) -> Path:
        login = keytab_login(self._keytab(principal), f"{principal}@{self.kdc.realm}", " useTicketCache=false")
        path.write_text(f"{section} {{\n  {login}\n}};\n")
        return path

    def _make_server(self) -> zookeeper.ZooKeeperServer:
        server_jaas = self._jaas_file(self.directory / "server_jaas.conf", "Server", "zookeeper/localhost")
        # DigestAuthenticationProvider compares base64(sha1("user:password")) with this property
        user = SUPER_USER.split(":", 1)[0]
        digest = base64.b64encode(hashlib.sha1(SUPER_USER.encode()).digest()).decode()
        return zookeeper.ZooKeeperServer(
            self.directory / "zk",
            settings={"authProvider.sasl": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
            jvm_opts=[f"-Djava.security.auth.login.config={server_jaas}", *self.kdc.java_options(),
                      f"-Dzookeeper.DigestAuthenticationProvider.superDigest={user}:{digest}"])

    def client_jaas_file(self, principal: str = BROKER_PRINCIPAL) -> Path:
        """A JAAS file whose ``Client`` section (the one ZooKeeper's Java client reads) logs in as
        ``principal`` with Krb5LoginModule and the principal's keytab."""
        return self._jaas_file(self.directory / f"client-{principal.replace('/', '_')}.jaas", "Client", principal)

    def kafka_opts(self, principal: str = BROKER_PRINCIPAL) -> str:
        """``KAFKA_OPTS`` for a broker that logs in to this ZooKeeper as ``principal``: the JAAS
        file, and the realm's krb5.conf for a JVM (a JVM reads no KRB5_CONFIG)."""
        return shlex.join([f"-Djava.security.auth.login.config={self.client_jaas_file(principal)}",
                           *self.kdc.java_options()])

    def env(self, principal: str = BROKER_PRINCIPAL) -> dict[str, str]:
        """Environment entries for a wirekafka broker logging in as ``principal``: KAFKA_OPTS,
        and the realm's (KRB5_CONFIG: MIT's library, which wirekafka uses, reads its krb5.conf
        from there, not from the JVM property)."""
        return {**self.kdc.env, "KAFKA_OPTS": self.kafka_opts(principal)}

    def acl_id(self, principal: str = BROKER_PRINCIPAL) -> tuple[str, str]:
        """The ACL id ZooKeeper gives a session logged in as ``principal``: the whole principal,
        ``("sasl", "kafka/localhost@<realm>")``."""
        return ("sasl", f"{principal}@{self.kdc.realm}")

    def kazoo(self, chroot: str = "", super_user: bool = False) -> KazooClient:
        """A started kazoo client on ``chroot``: the digest super user :data:`SUPER_USER` (who
        reads every ACL), or anonymous."""
        auth = [("digest", SUPER_USER)] if super_user else None
        return self._started(KazooClient(hosts=self.connect_string + chroot, timeout=10.0, auth_data=auth))
