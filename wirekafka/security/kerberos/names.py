"""Who a Kerberos client is to Kafka: its principal (`alice@REALM`, `kafka/host@REALM`) shortened
by `sasl.kerberos.principal.to.local.rules`, as Kafka's default principal builder does for GSSAPI
(KerberosShortNamer); the Kafka principal is then `User:<short name>`.

Rules are tried in order, the first that gives a name wins, none giving one fails the client's
authentication (NoMatchingRule):
- `DEFAULT`: the first component, when the realm is the default realm (`alice@REALM` and
  `alice/host@REALM` both give `alice`);
- `RULE:[n:format](match)s/from/to/g/L|U`: for a name of n components, format's `$0` is the
  realm and `$1`, `$2` the components; the result must fully match the Java regular expression
  `match` (when given), then `from` is replaced by `to` (once, or everywhere with `g`), then
  lower- or upper-cased with `/L` or `/U`. A result with '/' or '@' left in it is an error.
A name without a realm (no '@') is already short and is used as it is."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wirekafka.security.principal import NoMatchingRule, python_replacement

# Kafka's syntax of one rule (KerberosShortNamer): DEFAULT, or RULE:[n:format] with an optional
# (match), s/from/to/ with an optional g, and an optional /L or /U
_RULE = re.compile(r"(DEFAULT)|RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?")
_NAME = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
_PARAMETER = re.compile(r"([^$]*)(\$(\d*))?")


@dataclass(frozen=True)
class KerberosName:
    """A principal's parts: `primary[/instance]@realm`, or a bare name (no realm)."""

    primary: str
    instance: str | None = None
    realm: str | None = None

    @classmethod
    def parse(cls, principal: str) -> "KerberosName":
        """ValueError ("Malformed Kerberos name") for a name with a realm and more than two components."""
        match = _NAME.fullmatch(principal)
        if match is None:
            if "@" in principal:
                raise ValueError(f"Malformed Kerberos name: {principal}")
            return cls(principal)
        return cls(match.group(1), match.group(3), match.group(4))

    def __str__(self) -> str:
        instance = f"/{self.instance}" if self.instance is not None else ""
        realm = f"@{self.realm}" if self.realm is not None else ""
        return f"{self.primary}{instance}{realm}"


@dataclass(frozen=True)
class KerberosRule:
    """One rule; `text` is how Kafka prints it in its messages."""

    text: str
    components: int = 0  # 0 for DEFAULT
    format: str = ""
    match: re.Pattern[str] | None = None
    substitute: tuple[re.Pattern[str], str, bool] | None = None  # (from, to, every occurrence)
    case: str = ""  # "L", "U" or ""

    def apply(self, params: list[str], default_realm: str) -> str | None:
        """The short name for params ([realm, primary, instance...]), None if the rule does not apply."""
        result: str | None = None
        if not self.components:
            result = params[1] if params[0] == default_realm else None
        elif len(params) - 1 == self.components:
            base = _replace_parameters(self.format, params)
            if self.match is None or self.match.fullmatch(base):
                result = base
                if self.substitute is not None:
                    pattern, to, every = self.substitute
                    result = pattern.sub(python_replacement(to, pattern.groups), base, count=0 if every else 1)
        if result is not None and re.search("[/@]", result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self.text}")
        if result is not None and self.case:
            result = result.lower() if self.case == "L" else result.upper()
        return result


def _replace_parameters(format: str, params: list[str]) -> str:
    """format with each `$n` replaced by params[n]; NoMatchingRule (the client's authentication
    fails, as with Kafka's BadFormatString) for a '$' without a number or one out of range."""
    out: list[str] = []
    start = 0
    while start < len(format):
        match = _PARAMETER.match(format, start)
        assert match is not None  # the pattern matches at any position
        out.append(match.group(1))
        number = match.group(3)
        if number is not None:
            if not number:
                raise NoMatchingRule(f"bad format in username mapping in {number}")
            index = int(number)
            if index >= len(params):
                raise NoMatchingRule(f"index {index} from {format} is outside of the valid range 0 to "
                                     f"{len(params) - 1}")
            out.append(params[index])
        start = match.end()  # always past start: text, or a '$' with its number
    return "".join(out)


def _rule_text(match: re.Match[str]) -> str:
    """A parsed rule as Kafka prints it (KerberosRule.toString)."""
    if match.group(1):
        return "DEFAULT"
    text = f"RULE:[{int(match.group(2))}:{match.group(3)}]"
    if match.group(4) is not None:
        text += f"({match.group(5)})"
    if match.group(6) is not None:
        text += f"s/{match.group(7)}/{match.group(8)}/" + ("g" if match.group(9) else "")
    return text + (f"/{match.group(10)}" if match.group(10) else "")


class KerberosShortNamer:
    """sasl.kerberos.principal.to.local.rules with the realm DEFAULT treats as local."""

    def __init__(self, rules: list[KerberosRule], default_realm: str) -> None:
        self.rules, self.default_realm = rules, default_realm

    @classmethod
    def parse(cls, rules: tuple[str, ...] | list[str], default_realm: str) -> "KerberosShortNamer":
        """ValueError with Kafka's message for a rule it refuses (its broker does not start)."""
        parsed = []
        for rule in rules:
            match = _RULE.match(rule)
            if match is None:
                raise ValueError(f"Invalid rule: {rule}")
            if match.end() != len(rule):
                raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[match.end():]}`")
            if match.group(1):
                parsed.append(KerberosRule("DEFAULT"))
                continue
            if not match.group(2):
                raise ValueError(f'For input string: "" (rule {rule})')
            try:
                pattern = re.compile(match.group(5)) if match.group(4) is not None else None
                substitute = ((re.compile(match.group(7)), match.group(8), bool(match.group(9)))
                              if match.group(6) is not None else None)
            except re.error as exc:
                raise ValueError(f"Invalid rule: {rule}: {exc}") from None
            parsed.append(KerberosRule(_rule_text(match), int(match.group(2)), match.group(3), pattern,
                                       substitute, match.group(10) or ""))
        return cls(parsed, default_realm)

    def short_name(self, principal: str) -> str:
        """The local name of a principal; NoMatchingRule if no rule gives one, ValueError for a
        malformed principal."""
        name = KerberosName.parse(principal)
        if name.realm is None and name.instance is None:
            return name.primary
        params = [name.realm or "", name.primary] + ([name.instance] if name.instance is not None else [])
        for rule in self.rules:
            result = rule.apply(params, self.default_realm)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {name}, rules [{', '.join(r.text for r in self.rules)}]")
