""".properties files as java.util.Properties reads them (Properties.load(Reader)), and the
meta.properties files the broker writes.

Kafka reads server.properties and meta.properties with java.util.Properties, so every rule of
that format is the operator's to use: values continued on the next line with a trailing
backslash (Kafka's documentation writes `sasl.jaas.config` so), `key value` and `key:value` as
well as `key=value`, comments with `#` or `!`, escapes and `\\uXXXX`. One reader serves every
file; it lives in storage because meta.properties is a file of the log dir, and every layer
above may import it."""

from __future__ import annotations

import re
from pathlib import Path

from wirekafka.storage.checkpoint import atomic_write

_WHITESPACE = " \t\f"  # Properties' whitespace: space, tab, form feed (not newlines)
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_NEWLINE = re.compile(r"\r\n|\r|\n")  # Properties' line terminators, and no others


def read_properties(path: Path) -> dict[str, str]:
    """A .properties file's keys and values, read as ISO-8859-1 as Kafka reads server.properties
    and meta.properties (Properties.load of an InputStream; other characters come as \\uXXXX).
    ValueError for a malformed \\uXXXX escape, as Properties.load refuses one."""
    return parse_properties(path.read_text(encoding="iso-8859-1"))


def parse_properties(text: str) -> dict[str, str]:
    """Properties.load on text: each logical line's key and value; a key given twice keeps its
    last value. ValueError for a malformed \\uXXXX escape."""
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _logical_lines(text: str) -> list[str]:
    """The logical lines of text: leading whitespace dropped, comment and blank lines skipped,
    a line ending in an odd number of backslashes joined to the next one (that line's leading
    whitespace dropped; the joining backslash is not kept). Escapes stay as written."""
    out: list[str] = []
    pending: str | None = None  # a logical line that a trailing backslash continues
    physicals = _NEWLINE.split(text)
    if physicals[-1] == "":  # the text ends with a line terminator: no line follows it
        physicals.pop()
    for physical in physicals:
        stripped = physical.lstrip(_WHITESPACE)
        if pending is None:
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        else:
            line = pending + stripped
            # a continuation that leaves nothing so far starts afresh: it may be a comment or blank
            if not line:
                pending = None
                continue
            if pending == "" and line[0] in "#!":
                pending = None
                continue
        if _continues(line):
            pending = line[:-1]
        else:
            out.append(line)
            pending = None
    # A backslash on the last line is dropped and the line kept; Java's reader keeps even an empty
    # one (a key "" with value ""), unless the backslash is followed by "\r\n".
    if pending is not None and (pending or not text.endswith("\r\n")):
        out.append(pending)
    return out


def _continues(line: str) -> bool:
    """Whether the line ends in an odd number of backslashes (an escaped backslash does not
    continue it)."""
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """A logical line's key and value, still escaped: the key ends at the first `=`, `:` or
    whitespace not escaped by a backslash; then whitespace, at most one `=` or `:`, and more
    whitespace separate it from the value."""
    end = len(line)
    value_start = end
    has_separator = False
    escaped = False
    for i, c in enumerate(line):
        if not escaped and c in _SEPARATORS:
            end, value_start, has_separator = i, i + 1, True
            break
        if not escaped and c in _WHITESPACE:
            end, value_start = i, i + 1
            break
        escaped = c == "\\" and not escaped
    i = value_start
    while i < len(line):
        c = line[i]
        if c not in _WHITESPACE:
            if has_separator or c not in _SEPARATORS:
                break
            has_separator = True
        i += 1
    return line[:end], line[i:]


def _unescape(text: str) -> str:
    """Properties' escapes: \\t \\n \\r \\f, \\uXXXX (a UTF-16 unit: a surrogate pair makes one
    character), and a backslash before any other character stands for that character."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if c != "\\" or i == len(text):
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i:i + 4]
            if not _HEX4.fullmatch(digits):
                raise ValueError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def write_properties(path: Path, props: dict[str, str]) -> None:
    """A meta.properties as wirekafka writes it: a `#` line, then key=value lines in key order
    (its keys and values are ids and numbers, which need no escaping)."""
    body = "".join(f"{k}={v}\n" for k, v in sorted(props.items()))
    atomic_write(path, "#\n" + body)
