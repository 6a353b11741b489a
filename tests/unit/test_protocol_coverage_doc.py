"""docs/protocol-coverage.md says exactly what the handler registry serves."""
from __future__ import annotations

import re
from pathlib import Path

from kafkalike.broker.registry import load_handlers
from kafkalike.protocol.api import APIS

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol-coverage.md"


def test_served_column_matches_the_registry():
    handlers = load_handlers()
    rows = re.findall(r"^\| (\d+) \| (\w+) \| (\d+)–(\d+) \| [^|]+ \| ([^|]+) \|$", DOC.read_text(), re.M)
    assert {int(r[0]) for r in rows} == set(APIS)
    for key, name, lo, hi, served in rows:
        key = int(key)
        assert name == APIS[key].name
        assert (int(lo), int(hi)) == APIS[key].versions
        reg = handlers.get(key)
        expected = f"{reg.min_version}–{reg.max_version}" if reg else "–"
        assert served.strip() == expected, f"{name}: doc says {served.strip()}, registry {expected}"
