"""Kafka's 22-character identifiers: cluster ids and topic ids.

Both are 16 random bytes written as URL-safe base64 without the two padding characters
(Java's Base64.getUrlEncoder().withoutPadding()). A cluster id is a random version 4
UUID (CoreUtils.generateUuidAsBase64); a topic id is Kafka's own Uuid type, 128 random
bits that must not be the zero id nor the id reserved for the metadata topic.
"""
from __future__ import annotations

import base64
import binascii
import os
import uuid

ZERO_UUID = uuid.UUID(int=0)
METADATA_TOPIC_ID = uuid.UUID(int=1)


def uuid_to_base64(value: uuid.UUID) -> str:
    """The 22-character form Kafka prints and stores for an id."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_base64(text: str) -> uuid.UUID:
    """Parse the 22-character form; ValueError unless it encodes exactly 16 bytes."""
    if len(text) != 22:
        raise ValueError(f"a Kafka id is 22 base64 characters, got {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"not URL-safe base64: {text!r}") from error
    return uuid.UUID(bytes=raw)


def generate_cluster_id() -> str:
    """A fresh cluster id, as a Kafka broker proposes when /cluster/id does not exist yet."""
    return uuid_to_base64(uuid.uuid4())


def new_topic_id() -> uuid.UUID:
    """A random topic id.

    Besides the two reserved values we also skip ids whose text starts with '-', which
    command-line tools would mistake for an option (later Kafka versions do the same).
    """
    while True:
        candidate = uuid.UUID(bytes=os.urandom(16))
        if candidate in (ZERO_UUID, METADATA_TOPIC_ID) or uuid_to_base64(candidate).startswith("-"):
            continue
        return candidate
