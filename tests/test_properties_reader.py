"""The .properties reader against java.util.Properties.load's rules: logical lines and backslash
continuations, the `=`, `:` and whitespace separators, comments, escapes and \\uXXXX; then the
broker reading a server.properties written as Kafka's documentation writes one, and the
meta.properties files it writes and reads back."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirekafka.config.loader import load_config
from wirekafka.startup_errors import ConfigError
from wirekafka.storage.properties_file import parse_properties, read_properties, write_properties

# Kafka's documentation (SASL/SCRAM, "Configuring Kafka Brokers"), verbatim
KAFKA_DOC_JAAS = (
    "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config="
    "org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
    '    username="admin" \\\n'
    '    password="admin-secret";\n')
KAFKA_DOC_JAAS_VALUE = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                        'username="admin" password="admin-secret";')


def test_kafkas_documented_multi_line_jaas_config() -> None:
    assert parse_properties(KAFKA_DOC_JAAS) == {
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": KAFKA_DOC_JAAS_VALUE}


@pytest.mark.parametrize("line", ["key=value", "key:value", "key value", "key = value", "key : value",
                                  "key\tvalue", "key\fvalue", "   key=value", "key   value", "key \t= value"])
def test_separators(line: str) -> None:
    assert parse_properties(line + "\n") == {"key": "value"}


def test_the_key_ends_at_the_first_separator_and_one_more_belongs_to_the_value() -> None:
    assert parse_properties("a=b=c\n") == {"a": "b=c"}
    assert parse_properties("a:b:c\n") == {"a": "b:c"}
    assert parse_properties("a = = b\n") == {"a": "= b"}
    assert parse_properties("a  :=b\n") == {"a": "=b"}
    assert parse_properties("url http://host:9092/x\n") == {"url": "http://host:9092/x"}


def test_the_value_keeps_trailing_whitespace() -> None:
    assert parse_properties("a=b  \n") == {"a": "b  "}


def test_a_key_without_a_value() -> None:
    assert parse_properties("alone\nwith.sep=\nwith.colon:\nspaced   \n") == {
        "alone": "", "with.sep": "", "with.colon": "", "spaced": ""}


def test_comments_and_blank_lines() -> None:
    text = "# a comment\n! another\n   # indented comment\n\n   \t\nkey=value # not a comment\n"
    assert parse_properties(text) == {"key": "value # not a comment"}


def test_a_comment_does_not_continue_with_a_trailing_backslash() -> None:
    assert parse_properties("# comment \\\nkey=value\n") == {"key": "value"}


def test_continuation_drops_the_next_lines_leading_whitespace() -> None:
    assert parse_properties("fruits  apple, banana, \\\n        pear,\\\n\tcherry\n") == {
        "fruits": "apple, banana, pear,cherry"}


def test_a_continued_line_may_start_with_a_comment_character() -> None:
    assert parse_properties("key=a\\\n#b\n") == {"key": "a#b"}


def test_an_even_number_of_trailing_backslashes_does_not_continue() -> None:
    assert parse_properties("a=b\\\\\nc=d\n") == {"a": "b\\", "c": "d"}
    assert parse_properties("a=b\\\\\\\nc\n") == {"a": "b\\c"}


def test_a_continuation_then_a_blank_line_ends_the_value() -> None:
    assert parse_properties("a=b\\\n\nc=d\n") == {"a": "b", "c": "d"}


def test_a_backslash_at_the_end_of_the_text_is_dropped() -> None:
    assert parse_properties("a=b\\") == {"a": "b"}
    assert parse_properties("a=b\\\n") == {"a": "b"}


def test_line_terminators() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\nd=\\\r\n  4") == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_escapes() -> None:
    text = "tab=a\\tb\nnl=a\\nb\ncr=a\\rb\nff=a\\fb\nbs=a\\\\b\nother=\\q\\z\\\"\n"
    assert parse_properties(text) == {"tab": "a\tb", "nl": "a\nb", "cr": "a\rb", "ff": "a\fb", "bs": "a\\b",
                                      "other": 'qz"'}


def test_unicode_escapes() -> None:
    assert parse_properties("k\\u0065y=caf\\u00E9\n") == {"key": "café"}
    assert parse_properties("emoji=\\uD83D\\uDE00\n") == {"emoji": "\U0001F600"}  # a surrogate pair


@pytest.mark.parametrize("text", ["a=\\u12\n", "a=\\u12G4\n", "a=\\u"])
def test_a_malformed_unicode_escape_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="Malformed"):
        parse_properties(text)


def test_escaped_separators_and_whitespace_belong_to_the_key() -> None:
    assert parse_properties("a\\=b=c\n") == {"a=b": "c"}
    assert parse_properties("a\\:b:c\n") == {"a:b": "c"}
    assert parse_properties("a\\ b c\n") == {"a b": "c"}
    assert parse_properties("\\ lead=x\n") == {" lead": "x"}


def test_an_escaped_leading_space_of_the_value_is_kept() -> None:
    assert parse_properties("a=\\ b\n") == {"a": " b"}


def test_the_last_duplicate_wins() -> None:
    assert parse_properties("a=1\nb=2\na=3\n") == {"a": "3", "b": "2"}


def test_meta_properties_are_written_as_before_and_read_back(tmp_path: Path) -> None:
    meta = tmp_path / "meta.properties"
    props = {"cluster.id": "AAAAAAAAAAAAAAAAAAAAAA", "node.id": "1", "version": "1", "directory.id": "x"}
    write_properties(meta, props)
    assert meta.read_bytes() == (b"#\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\ndirectory.id=x\nnode.id=1\nversion=1\n")
    assert read_properties(meta) == props


def test_kafkas_own_meta_properties(tmp_path: Path) -> None:
    """As Kafka writes it: a date comment, then key=value lines."""
    meta = tmp_path / "meta.properties"
    meta.write_text("#\n#Tue Nov 28 10:00:00 UTC 2026\nnode.id=1\ndirectory.id=Zx\\=\\=\n"
                    "version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n")
    assert read_properties(meta) == {"node.id": "1", "directory.id": "Zx==", "version": "1",
                                     "cluster.id": "MkU3OEVBNTcwNTJENDM2Qg"}


def test_the_broker_loads_a_server_properties_written_as_kafkas_documentation(tmp_path: Path) -> None:
    """End to end, as `wirekafka serve server.properties` reads it: continuation lines, `key value`
    and `key:value` lines, comments, and --override on top."""
    path = tmp_path / "server.properties"
    path.write_text(
        "# a broker with a SASL listener\n"
        "listeners SASL_PLAINTEXT://127.0.0.1:0,\\\n"
        "           PLAINTEXT://127.0.0.1:0\n"
        "! the inter-broker listener\n"
        "inter.broker.listener.name:PLAINTEXT\n"
        f"log.dirs = {tmp_path / 'logs'}\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-256\n"
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="admin" \\\n'
        '    password="admin-secret";\n'
        + KAFKA_DOC_JAAS +
        "num.partitions 3  \n")
    cfg = load_config(path, ["num.partitions=4"])
    assert [lst.name for lst in cfg.listeners] == ["SASL_PLAINTEXT", "PLAINTEXT"]
    assert cfg.inter_broker_listener == "PLAINTEXT"
    assert cfg.log_dir == tmp_path / "logs"
    assert cfg.jaas_options("SASL_PLAINTEXT", "SCRAM-SHA-256") == {"username": "admin", "password": "admin-secret"}
    assert cfg.values["listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"] == KAFKA_DOC_JAAS_VALUE
    assert cfg.jaas_options("SASL_SSL", "SCRAM-SHA-256") == {"username": "admin", "password": "admin-secret"}
    assert cfg.int("num.partitions") == 4
    assert load_config(path, []).int("num.partitions") == 3  # a value's trailing whitespace is trimmed


def test_a_malformed_escape_in_server_properties_stops_start_up(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.rack=\\uZZZZ\n")
    with pytest.raises(ConfigError, match="Malformed"):
        load_config(path, [])


def test_files_are_read_as_iso_8859_1_as_kafka_reads_them(tmp_path: Path) -> None:
    """Kafka loads server.properties from an InputStream: bytes are ISO-8859-1 characters, and
    other characters are written as \\uXXXX."""
    path = tmp_path / "server.properties"
    path.write_bytes(b"latin=caf\xe9\nutf8=caf\xc3\xa9\nescaped=caf\\u00e9\n")
    assert read_properties(path) == {"latin": "café", "utf8": "cafÃ©", "escaped": "café"}
