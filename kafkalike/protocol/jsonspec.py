"""Read Kafka's JSON message definitions into our declaration types.

Not used at run time: our declarations live in kafkalike/protocol/messages. This
reader exists so a test can hold every declaration against Kafka's own definition
(../shared/reference/kafka-2.8-messages) and fail on any difference, and so a new API
can be drafted from its definition.
"""
from __future__ import annotations

import json
from pathlib import Path

from kafkalike.protocol.schema import PRIMITIVES, F, Field, Message, snake_case


def strip_comments(text: str) -> str:
    """Drop // comments outside string literals (Kafka's JSON allows them)."""
    out = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c == "/" and text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def parse_default(raw, type_: str, nullable: bool):
    """The JSON "default" as the Python value our classes use."""
    if isinstance(raw, str) and raw == "null":
        return None
    if type_ == "bool":
        return raw if isinstance(raw, bool) else raw == "true"
    if type_ in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return raw if isinstance(raw, int) else int(raw, 0)
    if type_ == "float64":
        return float(raw)
    return raw


def _field(d: dict, common: dict[str, list]) -> Field:
    type_ = d["type"]
    kw = {}
    if d.get("nullableVersions"):
        kw["nullable"] = d["nullableVersions"]
    if d.get("taggedVersions"):
        kw["tagged"] = d["taggedVersions"]
        kw["tag"] = d["tag"]
    if "default" in d:
        kw["default"] = parse_default(d["default"], type_, bool(d.get("nullableVersions")))
    if d.get("ignorable"):
        kw["ignorable"] = True
    if d.get("mapKey"):
        kw["map_key"] = True
    if d.get("entityType"):
        kw["entity_type"] = d["entityType"]
    if "flexibleVersions" in d:
        kw["flexible"] = d["flexibleVersions"]
    element = type_[2:] if type_.startswith("[]") else type_
    if element not in PRIMITIVES:
        sub = d.get("fields")
        if sub is None:
            sub = common[element]
        kw["fields"] = [_field(x, common) for x in sub]
    return F(snake_case(d["name"]), type_, d["versions"], **kw)


def read_json(path: str | Path) -> dict:
    """Parse one definition; trailing junk after the object is ignored, because
    one 2.8 file (DescribeProducersRequest.json) closes its brackets twice."""
    text = strip_comments(Path(path).read_text()).strip()
    return json.JSONDecoder().raw_decode(text)[0]


def load(path: str | Path) -> Message:
    spec = read_json(path)
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    return Message(
        name=spec["name"],
        type=spec["type"],
        valid=spec["validVersions"],
        flexible=spec.get("flexibleVersions", "none"),
        fields=[_field(d, common) for d in spec["fields"]],
        api_key=spec.get("apiKey"),
        listeners=tuple(spec.get("listeners", ())),
    )
