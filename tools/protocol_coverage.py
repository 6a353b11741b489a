"""Rewrite the table in docs/protocol-coverage.md from the handler registry.

Usage: python tools/protocol_coverage.py   (tests/unit/test_protocol_coverage_doc.py checks it)
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkalike.broker.registry import load_handlers  # noqa: E402
from kafkalike.protocol.api import APIS  # noqa: E402

DOC = ROOT / "docs" / "protocol-coverage.md"
HEADER = "| Key | API | Declared versions | Flexible from | Served |\n|---|---|---|---|---|\n"


def table() -> str:
    handlers = load_handlers()
    rows = []
    for key, spec in APIS.items():
        lo, hi = spec.versions
        flexible = spec.request.SCHEMA.flexible
        reg = handlers.get(key)
        served = f"{reg.min_version}–{reg.max_version}" if reg else "–"
        rows.append(f"| {key} | {spec.name} | {lo}–{hi} | {flexible if flexible != 'none' else '–'} | {served} |")
    return HEADER + "\n".join(rows) + "\n"


def main() -> None:
    text = DOC.read_text()
    text = re.sub(re.escape(HEADER) + r"(\|.*\|\n)+", lambda _: table(), text)
    DOC.write_text(text)


if __name__ == "__main__":
    main()
