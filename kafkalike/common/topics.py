"""Kafka's topic names: the internal topics and the rules a name must follow.

As Kafka's `org.apache.kafka.common.internals.Topic`: one place for the names of the
topics the cluster keeps for itself, and for what makes a topic name legal.
"""
from __future__ import annotations

import re

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidTopicName(ValueError):
    pass


def validate(name: str) -> None:
    if not name:
        raise InvalidTopicName("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicName("Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicName(
            f"Topic name \"{name}\" is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'")


def collides(a: str, b: str) -> bool:
    """'.' and '_' collide in metric names, so Kafka refuses topics that differ only so."""
    return a != b and a.replace(".", "_") == b.replace(".", "_")


def include_list_regex(expression: str) -> str:
    """Kafka's IncludeList (the tools' --whitelist): commas are alternatives, spaces and
    surrounding quotes are dropped, the rest is a regex matched against whole names."""
    text = expression.strip().replace(",", "|").replace(" ", "")
    return re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", text))
