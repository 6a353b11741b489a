"""Every ```python block of docs/client.md, run as written against a real broker.

The guide promises its examples run against localhost:9092; here each block runs in a
fresh namespace, in the order of the page (later blocks use what earlier ones made, as a
reader following along would), with only the bootstrap address replaced by this
module's broker. A block that raises or whose asserts fail is a broken example.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkalike.client.admin import AdminClient
from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.producer import KafkaProducer

pytestmark = pytest.mark.integration

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "client.md"
DOC_BOOTSTRAP = "localhost:9092"


def python_blocks(text: str) -> list[tuple[str, str]]:
    """(the heading above it, code) for each ```python block, in page order."""
    blocks = []
    heading = "top"
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.strip() == "```python":
            code = []
            for inner in lines:
                if inner.strip() == "```":
                    break
                code.append(inner)
            blocks.append((heading, "\n".join(code) + "\n"))
    return blocks


BLOCKS = python_blocks(GUIDE.read_text())


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def test_guide_has_the_examples_it_promises():
    headings = {slug(h) for h, _ in BLOCKS}
    for expected in ("send-and-wait-synchronous", "send-with-a-callback-asynchronous",
                     "keys-headers-and-serializers", "flush-and-close", "a-poll-loop-with-manual-commits",
                     "a-rebalance-listener-that-commits-on-revoke", "assign-mode-read-partitions-yourself",
                     "seeking-to-an-offset-to-the-beginning-by-time", "topics-and-their-configs", "consumer-groups",
                     "errors-which-to-retry", "commit-or-abort", "consume-transform-produce"):
        assert expected in headings, expected
    for heading, code in BLOCKS:
        assert DOC_BOOTSTRAP in code, f"example under {heading!r} does not use {DOC_BOOTSTRAP}"


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"{i:02d}-{slug(h)}" for i, (h, _) in enumerate(BLOCKS)])
def test_example_runs(index: int, broker) -> None:
    # Parametrized tests run in page order, so the blocks see the state the page builds up.
    heading, code = BLOCKS[index]
    code = code.replace(DOC_BOOTSTRAP, broker.bootstrap)
    namespace = {"__name__": f"client_md_example_{index}"}
    try:
        exec(compile(code, f"docs/client.md[{heading}]", "exec"), namespace)
    finally:
        close_clients(namespace)


def close_clients(namespace: dict) -> None:
    """Close what a failed example left open, so its threads do not log into later tests."""
    for value in namespace.values():
        if isinstance(value, (KafkaProducer, KafkaConsumer)):
            value.close(0)
        elif isinstance(value, AdminClient):
            value.close()
