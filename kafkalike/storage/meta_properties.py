"""`meta.properties` in each log dir: which broker and cluster the directory belongs to.

Kafka writes it on first start (`version=0`, `broker.id`, `cluster.id`) and refuses to
start when a dir's ids disagree with its config or the ZooKeeper cluster id. The file is
a Java properties file; this reads what java.util.Properties writes (comments, `=` or
`:` separators, backslash escapes) and writes the same shape, atomically.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from kafkalike.storage import layout
from kafkalike.storage.checkpoints import write_atomically
from kafkalike.storage.errors import CorruptCheckpointError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True, slots=True)
class MetaProperties:
    broker_id: int
    cluster_id: str | None = None
    version: int = 0


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch in "\\=:#!" or (ch == " " and (is_key or i == 0)):
            out.append("\\" + ch)
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """A java.util.Properties reader for the shapes Kafka's files take."""
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        # A line ending in an odd number of backslashes continues on the next line.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        i, key_end = 0, len(line)
        while i < len(line):
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                key_end = i
                break
            i += 1
        key = line[:key_end]
        rest = line[key_end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key)] = _unescape(rest)
    return props


def format_properties(props: dict[str, str], comment: str | None = None) -> str:
    lines = []
    if comment is not None:
        lines.append("#" + comment)
    lines.append("#" + time.strftime("%a %b %d %H:%M:%S %Z %Y"))
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def read_meta_properties(log_dir: str) -> MetaProperties | None:
    """The dir's meta.properties, None when absent; CorruptCheckpointError if unusable."""
    path = os.path.join(log_dir, layout.META_PROPERTIES_FILE)
    try:
        with open(path, encoding="latin-1") as handle:
            props = parse_properties(handle.read())
    except FileNotFoundError:
        return None
    try:
        version = int(props["version"])
    except (KeyError, ValueError):
        raise CorruptCheckpointError(f"{path} has no valid version") from None
    if version != 0:
        raise CorruptCheckpointError(f"{path} has unsupported version {version}")
    try:
        broker_id = int(props["broker.id"])
    except (KeyError, ValueError):
        raise CorruptCheckpointError(f"{path} has no valid broker.id") from None
    return MetaProperties(broker_id=broker_id, cluster_id=props.get("cluster.id"), version=version)


def write_meta_properties(log_dir: str, meta: MetaProperties) -> None:
    props = {"version": str(meta.version), "broker.id": str(meta.broker_id)}
    if meta.cluster_id is not None:
        props["cluster.id"] = meta.cluster_id
    write_atomically(os.path.join(log_dir, layout.META_PROPERTIES_FILE),
                     format_properties(props, comment=""))
