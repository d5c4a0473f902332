"""Kerberos principals as Kafka names them: KerberosName's parts and KerberosShortNamer's
sasl.kerberos.principal.to.local.rules (DEFAULT and RULE:[n:format](match)s/from/to/g/L|U), with
Kafka's messages for rules it refuses and names no rule maps."""

from __future__ import annotations

import pytest

from wirekafka.security.kerberos.names import KerberosName, KerberosShortNamer
from wirekafka.security.principal import NoMatchingRule

REALM = "EXAMPLE.COM"


def _short(principal: str, *rules: str, realm: str = REALM) -> str:
    return KerberosShortNamer.parse(list(rules) or ["DEFAULT"], realm).short_name(principal)


def test_names_are_split_into_primary_instance_and_realm() -> None:
    assert KerberosName.parse("kafka/broker1.example.com@EXAMPLE.COM") == KerberosName(
        "kafka", "broker1.example.com", "EXAMPLE.COM")
    assert KerberosName.parse("alice@EXAMPLE.COM") == KerberosName("alice", None, "EXAMPLE.COM")
    assert KerberosName.parse("alice") == KerberosName("alice")
    assert KerberosName.parse("a/b") == KerberosName("a/b")  # no realm: taken as it is
    assert str(KerberosName.parse("kafka/h@R")) == "kafka/h@R"
    with pytest.raises(ValueError, match="Malformed Kerberos name: a/b/c@R"):
        KerberosName.parse("a/b/c@R")


def test_default_strips_the_default_realm_and_the_instance() -> None:
    assert _short("alice@EXAMPLE.COM") == "alice"
    assert _short("kafka/broker1.example.com@EXAMPLE.COM") == "kafka"
    assert _short("alice") == "alice"  # already short
    with pytest.raises(NoMatchingRule, match=r"No rules apply to alice@OTHER.ORG, rules \[DEFAULT\]"):
        _short("alice@OTHER.ORG")


def test_rules_format_match_substitute_and_case() -> None:
    # one component with its realm: anyone from OTHER.ORG is known by name@other
    rule = "RULE:[1:$1@$0](.*@OTHER\\.ORG)s/@OTHER\\.ORG/_other/"
    assert _short("bob@OTHER.ORG", rule, "DEFAULT") == "bob_other"
    assert _short("bob@EXAMPLE.COM", rule, "DEFAULT") == "bob"  # the rule does not match: DEFAULT does
    # two components: the host part kept, lower-cased
    assert _short("HTTP/Web.Example.com@EXAMPLE.COM", "RULE:[2:$1_$2]/L") == "http_web.example.com"
    assert _short("alice@EXAMPLE.COM", "RULE:[1:$1]/U") == "ALICE"
    # s/// replaces the first occurrence; with g every one; $n in the replacement is a group
    assert _short("a.b.c@EXAMPLE.COM", "RULE:[1:$1]s/\\./-/") == "a-b.c"
    assert _short("a.b.c@EXAMPLE.COM", "RULE:[1:$1]s/\\./-/g") == "a-b-c"
    assert _short("ann@EXAMPLE.COM", "RULE:[1:$1](a.*)s/^(a)(.*)$/$2$1/") == "nna"
    # a rule for another number of components does not apply
    with pytest.raises(NoMatchingRule, match="No rules apply to kafka/h@EXAMPLE.COM"):
        _short("kafka/h@EXAMPLE.COM", "RULE:[1:$1]")


def test_a_result_with_slash_or_at_is_refused() -> None:
    with pytest.raises(NoMatchingRule, match=r"Non-simple name alice@EXAMPLE.COM after auth_to_local rule "
                                             r"RULE:\[1:\$1@\$0\]"):
        _short("alice@EXAMPLE.COM", "RULE:[1:$1@$0]")
    with pytest.raises(NoMatchingRule, match="index 2 from \\$2 is outside of the valid range 0 to 1"):
        _short("alice@EXAMPLE.COM", "RULE:[1:$2]")


@pytest.mark.parametrize("rule, message", [
    ("NOPE", "Invalid rule: NOPE"),
    ("RULE:[1:$1]x", "Invalid rule: `RULE:[1:$1]x`, unmatched substring: `x`"),
    ("DEFAULTS", "Invalid rule: `DEFAULTS`, unmatched substring: `S`"),
])
def test_rules_kafka_refuses(rule: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        KerberosShortNamer.parse([rule], REALM)
    assert str(err.value) == message


def test_an_empty_default_realm_matches_no_realm() -> None:
    """Kafka uses "" when the Kerberos configuration names no default realm."""
    with pytest.raises(NoMatchingRule):
        _short("alice@EXAMPLE.COM", realm="")
