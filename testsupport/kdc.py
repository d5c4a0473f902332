"""A throw-away MIT Kerberos realm for the GSSAPI tests: a KDC on a free 127.0.0.1 TCP port, its
database, and keytabs for the principals a test asks for, all in one temporary directory.

Everything the realm needs is in its own kdc.conf and krb5.conf, named to the tools through
KRB5_KDC_PROFILE and KRB5_CONFIG, so the machine's /etc/krb5.conf and any system KDC are never
touched and several realms can run at once. Clients (kcat, the Java tools, the broker) are
pointed at the realm with `env` (KRB5_CONFIG) or `java_options` (java.security.krb5.conf).

krb5.conf asks for TCP only (udp_preference_limit=1) and no DNS (rdns and
dns_canonicalize_hostname false), so `kafka/127.0.0.1` stays that name on every client.
The Debian packages come from scripts/install_system_deps.sh (krb5-kdc, krb5-admin-server,
krb5-user)."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
from pathlib import Path

from testsupport.broker_process import free_port

log = logging.getLogger(__name__)

REALM = "WIREKAFKA.TEST"
SBIN = Path("/usr/sbin")
KRB5KDC, KDB5_UTIL, KADMIN_LOCAL = SBIN / "krb5kdc", SBIN / "kdb5_util", SBIN / "kadmin.local"


def available() -> bool:
    """Whether MIT's KDC and admin tools are installed (scripts/install_system_deps.sh)."""
    return all(p.exists() for p in (KRB5KDC, KDB5_UTIL, KADMIN_LOCAL))


def keytab_login(keytab: Path | str, principal: str, extra: str = "") -> str:
    """Krb5LoginModule's JAAS text for a login with principal's keys from keytab, as Kafka users
    write it (useKeyTab, storeKey); `extra` options are appended (" isInitiator=false", say)."""
    return (f'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
            f'keyTab="{keytab}" principal="{principal}"{extra};')


class Kdc:
    """One realm in `directory`; start() creates it (the first time) and runs krb5kdc."""

    def __init__(self, directory: Path, realm: str = REALM) -> None:
        self.directory = Path(directory)
        self.realm = realm
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.krb5_conf = self.directory / "krb5.conf"
        self.kdc_conf = self.directory / "kdc.conf"
        self.log_path = self.directory / "krb5kdc.log"

    @property
    def env(self) -> dict[str, str]:
        """Environment for MIT-library programs (the broker, kcat, kinit) using this realm; an
        acceptor's replay cache goes to the realm's directory too, not /var/tmp."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf),
                "KRB5CCNAME": f"FILE:{self.directory / 'ccache'}", "KRB5RCACHEDIR": str(self.directory)}

    def kcat_login(self, principal: str, keytab: Path) -> tuple[list[str], dict[str, str]]:
        """kcat's -X arguments and environment for SASL_PLAINTEXT with GSSAPI as principal (full
        name) with keytab: librdkafka runs kinit into a ticket cache of the principal's own."""
        settings = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "GSSAPI",
                    "sasl.kerberos.service.name": "kafka", "sasl.kerberos.keytab": str(keytab),
                    "sasl.kerberos.principal": principal}
        cache = self.directory / f"kcat-{principal.split('@')[0].replace('/', '_')}.ccache"
        return ([a for k, v in settings.items() for a in ("-X", f"{k}={v}")],
                {**os.environ, **self.env, "KRB5CCNAME": f"FILE:{cache}"})

    def java_options(self) -> list[str]:
        """JVM options for the Java clients and brokers using this realm."""
        return [f"-Djava.security.krb5.conf={self.krb5_conf}"]

    def _write_config(self) -> None:
        db = self.directory / "db"
        db.mkdir(parents=True, exist_ok=True)
        self.kdc_conf.write_text(f"""[kdcdefaults]
    kdc_listen = 127.0.0.1:{self.port}
    kdc_tcp_listen = 127.0.0.1:{self.port}

[realms]
    {self.realm} = {{
        database_name = {db / 'principal'}
        key_stash_file = {db / 'stash'}
        acl_file = {db / 'kadm5.acl'}
        max_life = 1h
        max_renewable_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{self.log_path}
""")
        self.krb5_conf.write_text(f"""[libdefaults]
    default_realm = {self.realm}
    udp_preference_limit = 1
    rdns = false
    dns_canonicalize_hostname = false
    dns_lookup_kdc = false
    dns_lookup_realm = false
    ticket_lifetime = 1h
    forwardable = false

[realms]
    {self.realm} = {{
        kdc = 127.0.0.1:{self.port}
    }}
""")

    def _run(self, *args: str | Path, timeout: float = 60) -> str:
        proc = subprocess.run([str(a) for a in args], env={**os.environ, **self.env}, capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({proc.returncode}): {proc.stderr or proc.stdout}")
        return proc.stdout

    def _kadmin(self, query: str) -> str:
        return self._run(KADMIN_LOCAL, "-r", self.realm, "-q", query)

    def start(self, timeout: float = 30.0) -> "Kdc":
        """Create the realm's database (once) and start krb5kdc; wait until it takes connections."""
        if not self.port:
            self.port = free_port()
        self._write_config()
        if not (self.directory / "db" / "principal").exists():
            # a random master password: the stash file (-s) is all the KDC needs
            self._run(KDB5_UTIL, "create", "-s", "-r", self.realm, "-P", os.urandom(16).hex())
        with open(self.directory / "krb5kdc.err", "ab") as err:  # the child keeps its own descriptor
            self.proc = subprocess.Popen([str(KRB5KDC), "-n", "-r", self.realm], env={**os.environ, **self.env},
                                         stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"krb5kdc exited with {self.proc.returncode}: {self._log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    log.info("KDC for %s on 127.0.0.1:%d", self.realm, self.port)
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"krb5kdc did not listen within {timeout}s: {self._log_tail()}")

    def _log_tail(self) -> str:
        parts = [p.read_text(errors="replace")[-2000:] for p in (self.log_path, self.directory / "krb5kdc.err")
                 if p.exists()]
        return "\n".join(parts)

    def add_principal(self, name: str) -> str:
        """Create `name` (without realm) with a random key, if it does not exist; the full name."""
        principal = f"{name}@{self.realm}"
        if principal not in self._kadmin("listprincs").split():
            self._kadmin(f"addprinc -randkey {principal}")
        return principal

    def keytab(self, name: str, path: Path | None = None) -> Path:
        """A keytab with the current keys of principal `name` (created if needed). Exporting
        again makes new keys (ktadd randomizes them), so a keytab exported earlier stops working."""
        principal = self.add_principal(name)
        path = path or self.directory / f"{name.replace('/', '_')}.keytab"
        path.unlink(missing_ok=True)
        self._kadmin(f"ktadd -k {path} {principal}")
        return path

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.proc = None

    def __enter__(self) -> "Kdc":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

