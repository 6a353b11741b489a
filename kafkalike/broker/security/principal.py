"""ssl.principal.mapping.rules: how a client certificate's DN becomes a principal name
(Kafka's SslPrincipalMapper, KIP-371).

    ssl.principal.mapping.rules=RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),O=(.*?)$/$1@$2/L,DEFAULT

Rules are tried in order; a RULE applies when its pattern matches the whole DN and yields
the DN with the pattern replaced ($n are groups; a $n beyond the group count stays
literal), lower- or upper-cased with /L or /U; DEFAULT yields the DN itself. A DN no rule
applies to fails the connection's authentication, as in Kafka.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


class NoMatchingRule(Exception):
    pass


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern | None          # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        groups = self.pattern.groups

        def expand(m: re.Match) -> str:
            out, text, i = [], self.replacement, 0
            while i < len(text):
                c = text[i]
                if c == "\\" and i + 1 < len(text):
                    out.append(text[i + 1])
                    i += 2
                    continue
                if c == "$" and i + 1 < len(text) and text[i + 1].isdigit():
                    j = i + 1
                    while j < len(text) and text[j].isdigit():
                        j += 1
                    digits = text[i + 1:j]
                    # Java takes as many digits as name an existing group; none: literal.
                    while len(digits) > 1 and int(digits) > groups:
                        digits = digits[:-1]
                    n = int(digits)
                    if n <= groups and not (digits.startswith("0") and n != 0):
                        out.append(m.group(n) or "")
                        out.append(text[i + 1 + len(digits):j])
                    else:
                        out.append(text[i:j])
                    i = j
                    continue
                out.append(c)
                i += 1
            return "".join(out)
        result = self.pattern.sub(expand, dn)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


def _until_slash(text: str, pos: int) -> tuple[str, int]:
    out = []
    while pos < len(text) and text[pos] != "/":
        if text[pos] == "\\" and pos + 1 < len(text):
            out.append(text[pos:pos + 2])
            pos += 2
            continue
        out.append(text[pos])
        pos += 1
    if pos >= len(text):
        raise ValueError("missing '/'")
    return "".join(out), pos + 1


class SslPrincipalMapper:
    def __init__(self, rules: str | None) -> None:
        self.rules = self._parse((rules or "DEFAULT").strip())

    @staticmethod
    def _parse(text: str) -> list[_Rule]:
        rules: list[_Rule] = []
        pos = 0
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            start = pos
            try:
                if text.startswith("DEFAULT", pos):
                    rules.append(_Rule(None))
                    pos += len("DEFAULT")
                elif text.startswith("RULE:", pos):
                    pattern, pos = _until_slash(text, pos + 5)
                    replacement, pos = _until_slash(text, pos)
                    case = ""
                    if pos < len(text) and text[pos] in "LU":
                        case, pos = text[pos], pos + 1
                    try:
                        rules.append(_Rule(re.compile(pattern), replacement, case))
                    except re.error as exc:
                        raise ValueError(str(exc)) from None
                elif text[pos] == ",":
                    pass   # an empty rule is ignored
                else:
                    raise ValueError("unknown rule")
            except ValueError as exc:
                raise ValueError(f"Invalid rule: {text[start:].split(',')[0]} ({exc})") from None
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos < len(text):
                if text[pos] != ",":
                    raise ValueError(f"Invalid rule: `{text[start:]}`, unmatched substring: `{text[pos:]}`")
                pos += 1
        return rules

    def name(self, dn: str) -> str:
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.rules}")
