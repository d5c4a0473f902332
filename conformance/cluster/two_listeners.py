"""A cluster whose brokers each have two listeners, CLIENT (PLAINTEXT) and REPLICATION (PLAINTEXT,
SASL_PLAINTEXT with SASL/PLAIN, SASL/OAUTHBEARER or SASL/GSSAPI between the brokers, SSL, or SASL_SSL), with
REPLICATION the inter-broker one: checked the same way on a real Kafka 3.9 cluster
(compat-tests/test_zookeeper_launcher.py) and on wirekafka's (compat-tests/test_cluster.py).

- /brokers/ids/N lists both endpoints and both listeners' protocols, with the top-level host and
  port of the first PLAINTEXT endpoint (Kafka 3.9's registration JSON);
- Metadata asked on either listener lists every broker on that listener's ports, so a client
  that bootstraps on either stays on it;
- followers replicate over the REPLICATION listener: an acks=all write to an RF=3 topic is
  acknowledged and the leader has connections on its REPLICATION port (a wirekafka follower
  could reach CLIENT too, so the connections are what shows the listener was chosen)."""

from __future__ import annotations

import json
import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from testsupport.cluster import wait_for
from testsupport.kdc import Kdc, keytab_login
from testsupport.oauth_provider import OAuthProvider
from testsupport.tls_material import TlsMaterial

log = logging.getLogger(__name__)

# The REPLICATION listener's users when it runs SASL: brokers log in as "broker", clients as "admin".
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret" user_admin="admin-secret";')
SASL_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
               "sasl.password": "admin-secret"}
# With OAUTHBEARER (Kafka's default, unsecured tokens, scope "kafka" required): brokers log in as
# "broker" with their login module's token, clients as "admin" with librdkafka's unsecured JWT.
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="broker" unsecuredLoginListClaim_scope=",kafka" '
              'unsecuredValidatorRequiredScope="kafka";')
# Kafka's secured login and validator: brokers get tokens for client "broker" from the provider's
# token endpoint (testsupport/oauth_provider.py) and check tokens against its JWKS.
SECURED_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                'clientId="broker" clientSecret="broker-secret" scope="kafka";')
SECURED_LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
SECURED_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
OAUTH_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=admin scope=kafka"}


@dataclass(frozen=True)
class KerberosRealm:
    """GSSAPI on REPLICATION: every broker is kafka/localhost (Kafka's client asks for a ticket
    to <service>/<the host name of the address it connects to>, and 127.0.0.1's is localhost),
    with its keys in broker_keytab; clients log in as admin with admin_keytab."""

    kdc: Kdc
    broker_keytab: Path
    admin_keytab: Path

    @classmethod
    def create(cls, kdc: Kdc) -> "KerberosRealm":
        return cls(kdc, kdc.keytab("kafka/localhost"), kdc.keytab("admin"))

    def broker_jaas(self) -> str:
        return keytab_login(self.broker_keytab, f"kafka/localhost@{self.kdc.realm}")

    def metadata_ports(self, port: int) -> dict[int, int]:
        """Broker id -> port in a Metadata answer on the listener at port, asked by kcat as admin
        (librdkafka with Cyrus SASL's GSSAPI; confluent-kafka's wheels have no GSSAPI)."""
        login, env = self.kdc.kcat_login(f"admin@{self.kdc.realm}", self.admin_keytab)
        listing = subprocess.run(["kcat", "-L", "-J", "-b", f"localhost:{port}", "-m", "15", *login],
                                 capture_output=True, text=True, timeout=60, env=env)
        if listing.returncode != 0:  # a broker still starting, say: the caller asks again
            log.warning("kcat -L on port %d failed: %s", port, listing.stderr.strip()[-2000:])
            return {}
        return {b["id"]: int(b["name"].rsplit(":", 1)[1]) for b in json.loads(listing.stdout)["brokers"]}


def listener_overrides(client_port: int, replication_port: int, protocol: str = "PLAINTEXT",
                       tls: TlsMaterial | None = None, mechanism: str | None = None,
                       provider: OAuthProvider | None = None, kerberos: KerberosRealm | None = None) -> dict[str, str]:
    """One broker's settings: CLIENT on client_port, REPLICATION (protocol; SASL with mechanism,
    PLAIN, OAUTHBEARER or GSSAPI with kerberos's keys) on replication_port; an SSL or SASL_SSL one
    uses tls's stores (given as that listener's own settings). OAUTHBEARER with a provider is
    Kafka's secured login and validator: brokers get their tokens from its token endpoint and
    check tokens with its JWKS."""
    mechanism = mechanism or "PLAIN"
    listeners = f"CLIENT://127.0.0.1:{client_port},REPLICATION://127.0.0.1:{replication_port}"
    settings = {"listeners": listeners, "advertised.listeners": listeners,
                "listener.security.protocol.map": f"CLIENT:PLAINTEXT,REPLICATION:{protocol}",
                "inter.broker.listener.name": "REPLICATION"}
    if protocol.startswith("SASL_"):
        settings.update({"sasl.enabled.mechanisms": mechanism, "sasl.mechanism.inter.broker.protocol": mechanism,
                         f"listener.name.replication.{mechanism.lower()}.sasl.jaas.config":
                             OAUTH_JAAS if mechanism == "OAUTHBEARER" else JAAS})
    if mechanism == "GSSAPI":
        assert kerberos is not None, "GSSAPI needs the brokers' keys"
        settings.update({"listener.name.replication.gssapi.sasl.jaas.config": kerberos.broker_jaas(),
                         "sasl.kerberos.service.name": "kafka"})
    if provider is not None:
        settings.update({
            "listener.name.replication.oauthbearer.sasl.jaas.config": SECURED_JAAS,
            "listener.name.replication.oauthbearer.sasl.login.callback.handler.class": SECURED_LOGIN,
            "listener.name.replication.oauthbearer.sasl.server.callback.handler.class": SECURED_VALIDATOR,
            "sasl.oauthbearer.token.endpoint.url": provider.token_url,
            "sasl.oauthbearer.jwks.endpoint.url": provider.jwks_url,
            "sasl.oauthbearer.expected.audience": "kafka"})
    if protocol.endswith("SSL"):
        assert tls is not None, "an SSL listener needs key and trust stores"
        settings.update(tls.broker_settings(prefix="listener.name.replication."))
    return settings


def client_settings(protocol: str, tls: TlsMaterial | None, mechanism: str | None = None,
                    provider: OAuthProvider | None = None) -> dict[str, str]:
    """librdkafka's settings for the REPLICATION listener."""
    settings = dict(OAUTH_CLIENT if mechanism == "OAUTHBEARER" else SASL_CLIENT) if protocol.startswith("SASL_") else {}
    if provider is not None:
        settings = {"security.protocol": protocol, "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                    "sasl.oauthbearer.client.id": "admin", "sasl.oauthbearer.client.secret": "admin-secret",
                    "sasl.oauthbearer.token.endpoint.url": provider.token_url, "sasl.oauthbearer.scope": "kafka"}
    if protocol.endswith("SSL"):
        assert tls is not None
        settings.update(tls.librdkafka_settings())
        settings["security.protocol"] = protocol
    return settings


def _established_to(port: int) -> int:
    """Established TCP connections whose local end is 127.0.0.1:port (from /proc/net/tcp, and
    /proc/net/tcp6 where a JVM's sockets are IPv4-mapped IPv6 ones)."""
    local_ends = {f"0100007F:{port:04X}", f"0000000000000000FFFF00000100007F:{port:04X}"}
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and fields[1] in local_ends:
                count += 1
    return count


def _metadata_ports(port: int, client: dict[str, str]) -> dict[int, int]:
    found = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", **client}).list_topics(timeout=15)
    return {b.id: b.port for b in found.brokers.values()}


def check_two_listeners(client, ports: dict[int, tuple[int, int]], topic: str = "two-listeners",
                        protocol: str = "PLAINTEXT", tls: TlsMaterial | None = None,
                        mechanism: str | None = None, provider: OAuthProvider | None = None,
                        kerberos: KerberosRealm | None = None) -> str:
    """`client`: kazoo on the cluster's chroot; `ports`: broker id -> (CLIENT port, REPLICATION
    port); `protocol`: the REPLICATION listener's. With a provider, every broker has logged in
    with a token from its endpoint; with kerberos, REPLICATION's Metadata is asked with GSSAPI.
    Returns a summary."""
    for broker_id, (client_port, replication_port) in ports.items():
        raw = client.get(f"/brokers/ids/{broker_id}")[0].decode()
        reg = json.loads(raw)
        assert reg["endpoints"] == [f"CLIENT://127.0.0.1:{client_port}",
                                    f"REPLICATION://127.0.0.1:{replication_port}"], raw
        assert reg["listener_security_protocol_map"] == {"CLIENT": "PLAINTEXT", "REPLICATION": protocol}, raw
        assert (reg["host"], reg["port"]) == ("127.0.0.1", client_port), raw
    replication = client_settings(protocol, tls, mechanism, provider)
    metadata_on = (lambda port: _metadata_ports(port, {}),
                   kerberos.metadata_ports if kerberos is not None else lambda port: _metadata_ports(port, replication))
    for index, metadata in enumerate(metadata_on):
        for broker_id, pair in ports.items():
            seen = wait_for(lambda: (lambda m: m if len(m) == len(ports) else None)(metadata(pair[index])),
                            30, f"every broker in Metadata on listener {index} of broker {broker_id}")
            assert seen == {b: p[index] for b, p in ports.items()}, (index, broker_id, seen)

    bootstrap = ",".join(f"127.0.0.1:{c}" for c, _ in ports.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    leader = min(ports)
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[sorted(ports)])],
                        request_timeout=30)[topic].result(30)
    state_path = f"/brokers/topics/{topic}/partitions/0/state"
    wait_for(lambda: client.exists(state_path) and len(json.loads(client.get(state_path)[0])["isr"]) == len(ports),
             30, "every replica in sync")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    delivered: list = []
    for i in range(10):
        producer.produce(topic, b"v%d" % i, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 10, delivered
    replication_port = ports[leader][1]
    followers = wait_for(lambda: _established_to(replication_port) or None, 30,
                         f"followers connected to broker {leader}'s REPLICATION listener")
    if provider is not None:
        assert provider.issued.count("broker") >= len(ports), provider.issued
    return (f"registrations list CLIENT and REPLICATION ({protocol}{' ' + mechanism if mechanism else ''}); Metadata on each listener names its ports; "
            f"10 acks=all records acknowledged; {followers} connections on the leader's REPLICATION port")
