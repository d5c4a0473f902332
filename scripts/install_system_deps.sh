#!/usr/bin/env bash
# Install the Debian packages wirekafka's tests need, idempotently, as root, non-interactively.
#
#   kcat               librdkafka's command-line client (Debian package "kcat", formerly kafkacat),
#                      used by compat tests as an independent Kafka client.
#   strace             only for scripts/bench.py's syscall row (I/O syscalls per MB a broker serves).
#   java (17+), mvn    only to run the real Apache Kafka reference broker (scripts/realkafka.py);
#                      the polyglot machine image already has both, so normally nothing happens.
#   libzookeeper-java  Debian's Apache ZooKeeper jars (3.8.0 in Debian 12): the fallback server
#                      of scripts/zookeeper.py, which prefers ZooKeeper 3.8.4 from Maven Central
#                      (the one Kafka 3.9 ships) and runs /usr/share/java/zookeeper.jar when
#                      Maven cannot deliver. Its dependencies bring the rest of the classpath,
#                      named in the jar's manifest (zookeeper-jute, netty, snappy, dropwizard
#                      metrics, jackson, jetty, commons-cli/io, slf4j-api), and the slf4j-simple
#                      logging backend (libslf4j-java). The "zookeeper" package on top of it adds
#                      only zkServer.sh/zkCli.sh, /etc/zookeeper, a system user and a dependency
#                      on default-jre (the desktop JRE with its X11 and sound libraries), none of
#                      which is used; it starts no service either way (that is "zookeeperd").
#   krb5-kdc, krb5-admin-server, krb5-user  MIT Kerberos' KDC (krb5kdc, kdb5_util), its local
#                      admin tool (kadmin.local, which Debian 12 ships with kadmind) and client
#                      tools (kinit, klist): testsupport/kdc.py runs a throw-away realm for the
#                      GSSAPI tests. The packages' own services are not used (the realm lives in
#                      a temporary directory with its own kdc.conf/krb5.conf). The broker itself
#                      only needs libgssapi-krb5-2, which is already part of the base system.
#   libsasl2-modules-gssapi-mit  Cyrus SASL's GSSAPI plugin, which Debian's kcat (librdkafka with
#                      libsasl2) needs for sasl.mechanisms=GSSAPI.
#
# Each tool is checked with `command -v` (a jar with `test -f`) first; `apt-get update` runs at
# most once, and only if a package has to be installed and apt has no candidate for it yet.
# Prints what it did.
# Usage: sudo scripts/install_system_deps.sh   (or as root; exits non-zero on failure)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if [[ $(id -u) -ne 0 ]]; then
    SUDO=sudo
else
    SUDO=
fi

updated=0
apt_update_once() {
    if [[ $updated -eq 0 ]]; then
        echo "install_system_deps: apt-get update"
        $SUDO apt-get update -qq
        updated=1
    fi
}

has_candidate() {  # true if apt knows an installable version of package $1
    local cand
    cand=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
    [[ -n $cand && $cand != "(none)" ]]
}

# apt_install PACKAGE: apt-get install it (updating the package lists once if needed).
apt_install() {
    local pkg=$1
    if ! has_candidate "$pkg"; then
        apt_update_once
    fi
    if ! has_candidate "$pkg"; then
        echo "install_system_deps: no Debian package $pkg available" >&2
        return 1
    fi
    if ! $SUDO apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null; then
        [[ $updated -eq 0 ]] || return 1
        echo "install_system_deps: install failed with the current package lists; updating"
        apt_update_once
        $SUDO apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
    fi
}

# ensure COMMAND PACKAGE: install PACKAGE unless COMMAND is already on PATH.
ensure() {
    local cmd=$1 pkg=$2
    if command -v "$cmd" >/dev/null 2>&1; then
        echo "install_system_deps: $cmd already installed ($(command -v "$cmd")), skipping $pkg"
        return 0
    fi
    echo "install_system_deps: installing $pkg (for $cmd)"
    apt_install "$pkg"
    command -v "$cmd" >/dev/null 2>&1 || { echo "install_system_deps: $pkg installed but no $cmd" >&2; return 1; }
    echo "install_system_deps: installed $pkg -> $(command -v "$cmd")"
}

# ensure_file FILE PACKAGE: install PACKAGE unless FILE exists (for packages of jars).
ensure_file() {
    local file=$1 pkg=$2
    if [[ -f $file ]]; then
        echo "install_system_deps: $file already installed, skipping $pkg"
        return 0
    fi
    echo "install_system_deps: installing $pkg (for $file)"
    apt_install "$pkg"
    [[ -f $file ]] || { echo "install_system_deps: $pkg installed but no $file" >&2; return 1; }
    echo "install_system_deps: installed $pkg -> $file"
}

# ensure_package PACKAGE: install PACKAGE unless dpkg has it installed (for a plugin library,
# whose path depends on the architecture).
ensure_package() {
    local pkg=$1
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        echo "install_system_deps: $pkg already installed, skipping"
        return 0
    fi
    echo "install_system_deps: installing $pkg"
    apt_install "$pkg"
    echo "install_system_deps: installed $pkg"
}

ensure kcat kcat
ensure strace strace
ensure java openjdk-17-jre-headless
ensure mvn maven
ensure_file /usr/share/java/zookeeper.jar libzookeeper-java
ensure_file /usr/sbin/krb5kdc krb5-kdc
ensure_file /usr/sbin/kadmin.local krb5-admin-server
ensure kinit krb5-user
ensure_package libsasl2-modules-gssapi-mit
echo "install_system_deps: done"
