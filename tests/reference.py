"""Where the Kafka 2.8 reference material lives (outside the repository).

Tests that check our formats against Kafka's own definitions fail loudly when it is
missing rather than skip: a check that silently does not run proves nothing.
"""
from __future__ import annotations

import os
from pathlib import Path

_CANDIDATES = [
    os.environ.get("KAFKALIKE_REFERENCE", ""),
    str(Path(__file__).resolve().parents[2] / "shared" / "reference"),
    "/work/shared/reference",
]


def reference_dir() -> Path:
    for c in _CANDIDATES:
        if c and (Path(c) / "kafka-2.8-messages").is_dir():
            return Path(c)
    raise FileNotFoundError(
        "Kafka 2.8 reference not found; set KAFKALIKE_REFERENCE to the shared/reference dir")
