"""The sasl.jaas.config value: one JAAS login-module entry, as Kafka's JaasConfig reads it.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Kafka parses the value with Java's JAAS grammar (a class name, a control flag, then
key=value options, values quoted or bare, closed by a semicolon) and insists on exactly
one login module. The broker reads PLAIN's users from the user_<name> options and its
own inter-broker identity from username/password; clients read username/password.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([=;])|([^\s=;"]+))', re.S)


@dataclass
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str):
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith("//", pos):   # Java's StreamTokenizer skips comments
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
            continue
        if pos >= len(text):
            return
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"Unexpected character in JAAS config at {pos}")
        pos = m.end()
        if m.group(1) is not None:
            yield "quoted", re.sub(r"\\(.)", r"\1", m.group(1))
        elif m.group(2) is not None:
            yield m.group(2), m.group(2)
        else:
            yield "word", m.group(3)


def parse_jaas_config(text: str) -> LoginModule:
    """The one login module of a sasl.jaas.config value; ValueError with Kafka's sentence."""
    modules = _login_modules(text)
    if len(modules) != 1:
        raise ValueError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]


_SECTION = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*\{(.*?)\}\s*;", re.S)


def parse_jaas_file(text: str) -> dict[str, list[LoginModule]]:
    """A java.security.auth.login.config file: named sections (`Client { ... };`), each a
    list of login modules, as Java's ConfigFile reads it."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    sections: dict[str, list[LoginModule]] = {}
    pos = 0
    while text[pos:].strip():
        m = _SECTION.match(text, pos)
        if m is None:
            raise ValueError(f"Invalid JAAS login file near: {text[pos:pos + 40].strip()!r}")
        sections[m.group(1)] = _login_modules(m.group(2))
        pos = m.end()
    return sections


def _login_modules(text: str) -> list[LoginModule]:
    modules: list[LoginModule] = []
    tokens = list(_tokens(text))
    i = 0
    while i < len(tokens):
        kind, value = tokens[i]
        if kind != "word":
            raise ValueError(f"Invalid JAAS config: expected a login module class, found '{value}'")
        if i + 1 >= len(tokens) or tokens[i + 1][1].lower() not in FLAGS:
            raise ValueError(f"Invalid JAAS config: login module control flag not specified for {value}")
        module = LoginModule(value, tokens[i + 1][1].lower())
        i += 2
        while i < len(tokens) and tokens[i][0] != ";":
            if tokens[i][0] != "word" or i + 2 >= len(tokens) or tokens[i + 1][0] != "=" \
                    or tokens[i + 2][0] not in ("word", "quoted"):
                raise ValueError(f"Value not specified for key '{tokens[i][1]}' in JAAS config")
            module.options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ValueError("Invalid JAAS config: the login module entry is not terminated by ';'")
        i += 1
        modules.append(module)
    return modules


def plain_users(module: LoginModule) -> dict[str, str]:
    """PlainServerCallbackHandler's user table: the user_<name>="<password>" options."""
    return {k[5:]: v for k, v in module.options.items() if k.startswith("user_")}
