"""Kafka's rules for topic names (kafka.common.Topic / org.apache.kafka.common.internals.Topic)."""
from __future__ import annotations

import re

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
