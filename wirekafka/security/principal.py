"""Who a TLS client is: Kafka's default principal builder for an SSL connection. The client
certificate's subject, as a distinguished name in RFC 2253 form ("CN=app,OU=eng,O=example"), is
mapped by `ssl.principal.mapping.rules` (Kafka's SslPrincipalMapper): a comma-separated list of
`DEFAULT` (the name as it is) and `RULE:pattern/replacement/[L|U]` (the first rule whose Java
regular expression matches the whole name gives the replacement, optionally lower- or upper-cased).
No rule matching fails the connection's authentication, as in Kafka. Client quotas look users up
by this name."""

from __future__ import annotations

import re

# Kafka's RULE_PATTERN: DEFAULT, RULE:<pattern>/<replacement>/<L|U|>, or anything (an invalid rule)
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(Exception):
    """No mapping rule applies to a client's name: its authentication fails."""


class SslPrincipalMapper:
    def __init__(self, rules: list[tuple[re.Pattern[str], str, str] | None]) -> None:
        self._rules = rules  # None: DEFAULT; else (pattern, replacement, case "L"/"U"/"")

    @classmethod
    def parse(cls, text: str | None) -> "SslPrincipalMapper":
        """The rules of an ssl.principal.mapping.rules value; ValueError with Kafka's message for
        an invalid one (Kafka's broker stops at start-up with it)."""
        rules: list[tuple[re.Pattern[str], str, str] | None] = []
        for match in _SPLITTER.finditer((text if text is not None else "DEFAULT").strip()):
            rule = match.group(1)
            parsed = _PARSER.match(rule)
            if parsed is None:
                raise ValueError(f"Invalid rule: {rule}")
            if parsed.end() != len(rule):
                raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[parsed.end():]}`")
            if parsed.group(1) is not None:
                rules.append(None)
            elif parsed.group(2) is not None:
                try:
                    pattern = re.compile(parsed.group(2))
                except re.error as exc:
                    raise ValueError(f"Invalid rule: {rule}: {exc}") from None
                rules.append((pattern, parsed.group(4), parsed.group(6)))
            # anything else is an empty rule, which Kafka ignores
        return cls(rules)

    def name(self, distinguished_name: str) -> str:
        for rule in self._rules:
            if rule is None:
                return distinguished_name
            pattern, replacement, case = rule
            if pattern.fullmatch(distinguished_name):
                result = pattern.sub(python_replacement(replacement, pattern.groups), distinguished_name)
                return result.lower() if case == "L" else result.upper() if case == "U" else result
        raise NoMatchingRule(f"No rules apply to {distinguished_name}")


def python_replacement(java: str, groups: int) -> str:
    """A Java Matcher replacement as a Python re one: `$n` a group (a first digit beyond the
    groups is literal text, as Kafka escapes it; further digits count while they name a group),
    a backslash quotes the next character."""
    out: list[str] = []
    i = 0
    while i < len(java):
        ch = java[i]
        if ch == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
        elif ch == "$" and i + 1 < len(java) and java[i + 1].isdigit() and int(java[i + 1]) <= groups:
            number, i = int(java[i + 1]), i + 2
            while i < len(java) and java[i].isdigit() and number * 10 + int(java[i]) <= groups:
                number, i = number * 10 + int(java[i]), i + 1
            out.append(f"\\g<{number}>")
        else:
            out.append("\\\\" if ch == "\\" else ch)
            i += 1
    return "".join(out)
