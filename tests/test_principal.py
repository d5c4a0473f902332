"""ssl.principal.mapping.rules as Kafka's SslPrincipalMapper reads and applies them."""

from __future__ import annotations

import pytest

from wirekafka.startup_errors import ConfigError
from wirekafka.config.loader import build_config
from wirekafka.security.principal import NoMatchingRule, SslPrincipalMapper

RULES = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
         "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
         "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
         "DEFAULT")


@pytest.mark.parametrize("name,mapped", [
    ("CN=kafka-server1,OU=ServiceUsers,O=Org,L=City,ST=State,C=US", "kafka-server1"),
    ("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US", "duke@javasoft"),
    ("cn=duke,ou=x", "DUKE"),
    ("OU=no-common-name", "OU=no-common-name"),
])
def test_the_first_matching_rule_names_the_client(name: str, mapped: str) -> None:
    assert SslPrincipalMapper.parse(RULES).name(name) == mapped


def test_default_keeps_the_name_and_no_rule_fails_the_client() -> None:
    assert SslPrincipalMapper.parse(None).name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(NoMatchingRule, match="No rules apply to OU=a"):
        SslPrincipalMapper.parse("RULE:^CN=(.*)$/$1/").name("OU=a")


def test_replacements_read_as_java_reads_them() -> None:
    # a group beyond the pattern's is literal text; a backslash quotes the next character
    assert SslPrincipalMapper.parse("RULE:^CN=(.*)$/$1$2x/").name("CN=a") == "a$2x"
    assert SslPrincipalMapper.parse(r"RULE:^CN=(.*)$/\$1-$1/").name("CN=a") == "$1-a"
    assert SslPrincipalMapper.parse("RULE:^CN=(.*)$/$0!/").name("CN=a") == "CN=a!"


@pytest.mark.parametrize("rules,message", [
    ("foo", "Invalid rule: `foo`, unmatched substring: `foo`"),
    ("RULE:a/b/c/d", "Invalid rule: `RULE:a/b/c/d`, unmatched substring: `c/d`"),
])
def test_invalid_rules_stop_startup_with_kafkas_message(rules: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("$", r"\$")):
        SslPrincipalMapper.parse(rules)
    with pytest.raises(ConfigError):
        build_config({"ssl.principal.mapping.rules": rules})
    with pytest.raises(ConfigError):
        build_config({"listeners": "PLAINTEXT://127.0.0.1:0", "listener.name.plaintext.ssl.principal.mapping.rules": rules})


def test_only_kafkas_principal_builder() -> None:
    with pytest.raises(ConfigError, match="principal.builder.class"):
        build_config({"principal.builder.class": "com.example.Builder"})
    build_config({"principal.builder.class": "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"})
