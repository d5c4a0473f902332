"""A GSSAPI listener's Kerberos identity, as a Kafka broker gets it from the listener's JAAS login
module (`listener.name.<l>.gssapi.sasl.jaas.config`), e.g.

    com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true
        keyTab="/etc/kafka/kafka.keytab" principal="kafka/broker1.example.com@EXAMPLE.COM";

The broker accepts clients' tickets for that principal with its keys from the keytab. Clients
name the service `<sasl.kerberos.service.name>/<broker host>`, so the principal's first component
is the service name and its second the host clients connect to.

What is checked at start-up, as Kafka's broker (KerberosLogin) refuses to start:
- a service name from the module's `serviceName` option or `sasl.kerberos.service.name` (one of
  them, equal if both are given: Kafka's messages);
- the principal.to.local rules parse (Kafka's messages);
- the keytab holds keys for the principal (Kafka's Krb5LoginModule login fails otherwise), and,
  unless the module says isInitiator=false, the KDC gives a ticket for them (log_in).
wirekafka has no JVM login: a module other than Krb5LoginModule, or one without a keytab
(`useKeyTab=true`, `keyTab`, `principal`, `storeKey=true`), stops start-up instead of failing
every client later. An acceptor needs only its keys. On the inter-broker listener with
sasl.mechanism.inter.broker.protocol=GSSAPI the broker is also a client (client_context): MIT's
library gets its tickets with the keytab's keys, and a new one when the last expires, so the
ticket-renewal settings (`sasl.kerberos.kinit.cmd`, `...ticket.renew.*`,
`...min.time.before.relogin`) have nothing to act on."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
import uuid
from dataclasses import dataclass

from wirekafka.security.kerberos import gssapi_binding
from wirekafka.security.kerberos.names import KerberosShortNamer

LOGIN_MODULES = ("com.sun.security.auth.module.Krb5LoginModule", "com.ibm.security.auth.module.Krb5LoginModule")
# Kafka 4.3.1's start-up failure when Krb5LoginModule finds no keys for the principal in the keytab
LOGIN_FAILED = ("javax.security.auth.login.LoginException: Could not login: the client is being asked for a password, "
                "but the Kafka client code does not currently support obtaining a password from the user. not "
                "available to garner  authentication information from the user")


class KerberosLoginError(ValueError):
    """A GSSAPI listener's settings a broker does not start with."""


@dataclass(frozen=True)
class KerberosLogin:
    principal: str  # the service's full principal, kafka/host@REALM
    keytab: str
    short_namer: KerberosShortNamer
    initiator: bool = True  # Krb5LoginModule's isInitiator: the login gets a ticket from the KDC
    service_name: str = "kafka"  # what other brokers are asked for tickets to: <service_name>/<host>

    def acceptor(self) -> gssapi_binding.Credential:
        """Acceptor credentials for the principal from the keytab (read again at each accept,
        so a keytab replaced on disk takes effect); raises gssapi_binding.GssError."""
        return gssapi_binding.Credential.acceptor(self.principal, self.keytab)

    def client_context(self, peer_host: str) -> gssapi_binding.InitiatorContext:
        """A context for logging in to the broker on peer_host as this principal, as Kafka's
        inter-broker client does: the service is <service_name>/<host name> with an address
        first resolved to its name (Java's InetAddress.getHostName()). The ticket-granting ticket
        is kept in one in-memory cache per process and principal, so connections share it; the
        library gets a new one from the keytab when it expires. Blocking (DNS, the KDC): run it,
        and the context's steps, in a worker thread. Raises gssapi_binding.GssError. The cache is
        named by keytab too: tickets got with one keytab's keys never serve another's (a process
        that meets two realms of the same name, as a test run does, would otherwise reuse them)."""
        keytab_id = hashlib.sha256(os.fsencode(os.path.abspath(self.keytab))).hexdigest()[:16]
        credential = gssapi_binding.Credential.initiator(
            self.principal, self.keytab, f"MEMORY:wirekafka-{os.getpid()}-{self.principal}-{keytab_id}")
        return gssapi_binding.InitiatorContext(credential, f"{self.service_name}/{host_name(peer_host)}")


def host_name(host: str) -> str:
    """host, or the name an address resolves back to (itself when it has none)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host
    try:
        return socket.gethostbyaddr(host)[0]
    except OSError:
        return host


def _true(options: dict[str, str], key: str) -> bool:
    return options.get(key, "").strip().lower() == "true"


def configure(module_name: str, options: dict[str, str], service_name: str | None,
              rules: tuple[str, ...]) -> KerberosLogin:
    """The listener's identity from its JAAS module and the broker's (or listener's)
    sasl.kerberos.service.name and sasl.kerberos.principal.to.local.rules; KerberosLoginError
    with the reason it does not start otherwise (checked in Kafka's order: rules, service name,
    login)."""
    if not gssapi_binding.available():
        raise KerberosLoginError("GSSAPI needs MIT Kerberos' libgssapi_krb5.so.2 (Debian: libgssapi-krb5-2)")
    default_realm = gssapi_binding.default_realm()
    try:
        short_namer = KerberosShortNamer.parse(rules, default_realm)
    except ValueError as exc:
        raise KerberosLoginError(str(exc)) from None
    jaas_service = options.get("serviceName")
    if jaas_service is not None and service_name is not None and jaas_service != service_name:
        raise KerberosLoginError(f"Conflicting serviceName values found in JAAS and Kafka configs value in JAAS "
                                 f"file {jaas_service}, value in Kafka config {service_name}")
    service = jaas_service or service_name
    if service is None:  # (an empty JAAS serviceName without a Kafka one fails here too)
        raise KerberosLoginError("No serviceName defined in either JAAS or Kafka config")
    if module_name not in LOGIN_MODULES:
        raise KerberosLoginError(f"GSSAPI needs {LOGIN_MODULES[0]} in its JAAS config, not {module_name}: wirekafka "
                                 "has no JVM login modules")
    if not (_true(options, "useKeyTab") and _true(options, "storeKey") and options.get("keyTab")
            and options.get("principal")):
        raise KerberosLoginError("GSSAPI needs the broker's keys: set useKeyTab=true storeKey=true keyTab=\"...\" "
                                 "principal=\"...\" in its Krb5LoginModule (wirekafka has no ticket-cache or "
                                 "password login)")
    principal = options["principal"]
    if "@" not in principal and default_realm:
        principal = f"{principal}@{default_realm}"  # as Krb5LoginModule completes it
    login = KerberosLogin(principal, options["keyTab"], short_namer,
                          options.get("isInitiator", "true").strip().lower() != "false",
                          service.strip())
    try:
        login.acceptor().release()
    except gssapi_binding.GssError as exc:
        raise KerberosLoginError(f"{LOGIN_FAILED} ({principal}, keytab {login.keytab}: {exc})") from None
    return login


def log_in(login: KerberosLogin) -> None:
    """What Krb5LoginModule does at a broker's start-up unless isInitiator=false: get a ticket
    from the KDC with the keytab's keys, so a broker whose keys the KDC no longer has (or that
    cannot reach a KDC) does not start. Here a ticket for the service itself is asked for, in a
    credential cache of this call only. KerberosLoginError with the library's reason."""
    try:
        credential = gssapi_binding.Credential.initiator(login.principal, login.keytab,
                                                        f"MEMORY:wirekafka-{uuid.uuid4()}")
        context = gssapi_binding.InitiatorContext(credential, login.principal)
        context.step()
    except gssapi_binding.GssError as exc:
        raise KerberosLoginError(f"javax.security.auth.login.LoginException: {exc} ({login.principal})") from None
    context.delete()
    credential.release()
