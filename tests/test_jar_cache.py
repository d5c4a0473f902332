"""scripts/jvm_process.resolve_with_maven's cache of resolved jars, with a stand-in for Maven (a
script that writes the jars the POM would): a second call with the same POM resolves nothing; a
changed POM resolves again and drops the class archives (AppCDS .jsa files) made from the old
jars, which a JVM could not use with the new ones and would warn about on a tool's stdout (found
when kafka-streams joined scripts/maven/kafka/pom.xml)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from scripts import jvm_process

FAKE_MVN = """#!/bin/sh
# Writes one jar per <artifactId> of the POM into -DoutputDirectory=, and counts its runs.
out=""; pom=""
while [ $# -gt 0 ]; do
  case "$1" in
    -DoutputDirectory=*) out="${1#-DoutputDirectory=}" ;;
    -f) shift; pom="$1" ;;
  esac
  shift
done
mkdir -p "$out"
for a in $(sed -n 's:.*<artifactId>\\(.*\\)</artifactId>.*:\\1:p' "$pom"); do : > "$out/$a-1.0.jar"; done
echo run >> "$(dirname "$pom")/runs"
"""


@pytest.fixture
def fake_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    mvn = tmp_path / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("WIREKAFKA_MVN", str(mvn))
    monkeypatch.setenv("WIREKAFKA_CACHE", str(tmp_path / "cache"))
    return mvn


def _resolve(pom: Path, home: Path) -> Path:
    return jvm_process.resolve_with_maven(pom, home, "1.0", version_property="v", main_jar="main-*.jar",
                                          what="test jars", timeout=30)


def _runs(pom: Path) -> int:
    runs = pom.parent / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_a_changed_pom_resolves_again_and_drops_archives_of_the_old_jars(fake_maven: Path, tmp_path: Path) -> None:
    pom = tmp_path / "pom.xml"
    pom.write_text("<artifactId>main</artifactId>\n")
    home = tmp_path / "cache" / "home"
    libs = _resolve(pom, home)
    assert sorted(p.name for p in libs.iterdir()) == ["main-1.0.jar"] and _runs(pom) == 1
    for archive in ("tools.jsa", "broker.jsa"):  # what realkafka makes beside libs
        (home / archive).write_bytes(b"archive of the old jars")
    (home / "log4j2-tools.properties").write_text("kept")

    assert _resolve(pom, home) == libs and _runs(pom) == 1  # the same POM: nothing resolved or dropped
    assert (home / "tools.jsa").exists() and (home / "broker.jsa").exists()

    pom.write_text("<artifactId>main</artifactId>\n<artifactId>streams</artifactId>\n")
    assert _resolve(pom, home) == libs and _runs(pom) == 2
    assert sorted(p.name for p in libs.iterdir()) == ["main-1.0.jar", "streams-1.0.jar"]
    assert sorted(p.name for p in home.iterdir() if not p.name.startswith(".")) == ["libs", "log4j2-tools.properties"]
