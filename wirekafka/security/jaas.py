"""JAAS configuration text as Kafka reads a `sasl.jaas.config` value: one login module, its
control flag and its options, e.g.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

Kafka parses it with java.io.StreamTokenizer (JaasConfig); this follows the same token rules —
words of letters, digits, '.', '-', '_' and '$', strings in double or single quotes with
backslash escapes, // and /* */ comments, a bare number is not a value — and Kafka's messages
for text it refuses. A broker's PLAIN server reads the `user_<name>` options as its users and,
for its own connections to other brokers, `username` and `password`."""

from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_WORD_START = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_$")
_WORD = _WORD_START | set("0123456789.")
_NUMBER = set("0123456789.")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


class JaasError(ValueError):
    """Text Kafka's JaasConfig refuses, with its message."""


@dataclass(frozen=True)
class LoginModule:
    name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


# A token: ("word", text), ("string", text), ("number", text: no string value), or (char, char).
_Token = tuple[str, str]


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "\"'":
            i, value = _quoted(text, i + 1, c)
            out.append(("string", value))
        elif c in _WORD_START or ord(c) >= 160:
            start = i
            while i < n and (text[i] in _WORD or ord(text[i]) >= 160):
                i += 1
            out.append(("word", text[start:i]))
        elif c in _NUMBER:
            start = i
            while i < n and text[i] in _NUMBER:
                i += 1
            out.append(("number", text[start:i]))
        else:
            out.append((c, c))
            i += 1
    return out


def _quoted(text: str, i: int, quote: str) -> tuple[int, str]:
    chars = []
    while i < len(text) and text[i] != quote and text[i] != "\n":
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
            chars.append(_ESCAPES.get(text[i], text[i]))
        else:
            chars.append(text[i])
        i += 1
    return i + 1, "".join(chars)


def _value(token: _Token | None) -> str | None:
    return token[1] if token is not None and token[0] in ("word", "string") else None


def parse(text: str) -> list[LoginModule]:
    """Every login module in text; JaasError with Kafka's message for text it refuses."""
    tokens = _tokens(text)
    modules, _ = _modules(tokens, 0, None)
    if not modules:
        raise JaasError("Login module not specified in JAAS config")
    return modules


def parse_file(text: str) -> dict[str, list[LoginModule]]:
    """A JAAS login configuration file, as `-Djava.security.auth.login.config` names one to the
    JVM: its sections (`Name { module flag options; ... };`) by name. A broker reads the ZooKeeper
    client's login from one (the `Client` section), as Kafka 3.9's ZooKeeper client does."""
    tokens = _tokens(text)
    sections: dict[str, list[LoginModule]] = {}
    i = 0
    while i < len(tokens):
        name = _value(tokens[i])
        if name is None or i + 1 >= len(tokens) or tokens[i + 1][0] != "{":
            found = "a quoted value" if tokens[i][0] == "string" else repr(tokens[i][1])  # maybe a password
            raise JaasError(f"Configuration Error: expected a login configuration name and '{{', found {found}")
        modules, i = _modules(tokens, i + 2, "}")
        if i + 1 >= len(tokens) or tokens[i + 1][0] != ";":
            raise JaasError(f"Configuration Error: expected ';' after the '}}' of {name}")
        sections[name] = sections.get(name, []) + modules
        i += 2
    return sections


def _modules(tokens: list[_Token], i: int, stop: str | None) -> tuple[list[LoginModule], int]:
    """The login modules from tokens[i] to the `stop` token (or the end when None): the modules
    and the index of the stop token."""
    modules = []
    while i < len(tokens) and (stop is None or tokens[i][0] != stop):
        name = _value(tokens[i]) or ""
        i += 1
        if i >= len(tokens):
            raise JaasError("Login module control flag not specified in JAAS config")
        flag = _value(tokens[i])
        if flag is None:
            raise JaasError("Login module control flag is not available in the JAAS config")
        if flag.upper() not in FLAGS:
            raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 1
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            key = _value(tokens[i])
            value = _value(tokens[i + 2]) if i + 2 < len(tokens) and tokens[i + 1][0] == "=" else None
            if value is None:
                raise JaasError(f"Value not specified for key '{key}' in JAAS config")
            options[key or ""] = value
            i += 3
        if i >= len(tokens):
            raise JaasError("JAAS config entry not terminated by semi-colon")
        i += 1
        modules.append(LoginModule(name, flag.upper(), options))
    if stop is not None and i >= len(tokens):
        raise JaasError(f"Configuration Error: expected '{stop}'")
    return modules, i


def single_module(text: str) -> LoginModule:
    """The one login module of a sasl.jaas.config value, as Kafka requires of that property."""
    modules = parse(text)
    if len(modules) != 1:
        raise JaasError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]
