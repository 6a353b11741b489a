"""Draft message declarations for kafkalike/protocol/messages from Kafka's JSON.

Usage: python tools/draft_messages.py ../shared/reference/kafka-2.8-messages [--only Name]

Writes one module per API (request and response together) in our DSL. The modules are
then ours: edited by hand, and held against the JSON by
tests/unit/test_protocol_declarations.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkalike.protocol.jsonspec import _field, load, read_json  # noqa: E402
from kafkalike.protocol.schema import MISSING, Field, snake_case  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "kafkalike" / "protocol" / "messages"


def render_field(f: Field, indent: str, common: set[str]) -> str:
    args = [repr(f.name), repr(f.type), repr(f.versions)]
    if f.nullable != "none":
        args.append(f"nullable={f.nullable!r}")
    if f.tagged != "none":
        args.append(f"tagged={f.tagged!r}, tag={f.tag}")
    if f.default is not MISSING:
        args.append(f"default={f.default!r}")
    if f.ignorable:
        args.append("ignorable=True")
    if f.map_key:
        args.append("map_key=True")
    if f.entity_type:
        args.append(f"entity_type={f.entity_type!r}")
    if f.flexible is not None:
        args.append(f"flexible={f.flexible!r}")
    head = f"{indent}F({', '.join(args)}"
    if f.fields is None:
        return head + "),"
    if f.element_type in common:
        return head + f", fields={constant(f.element_type)}),"
    inner = "\n".join(render_field(x, indent + "    ", common) for x in f.fields)
    return f"{head}, fields=[\n{inner}\n{indent}]),"


def constant(name: str) -> str:
    return "_" + snake_case(name).upper()


def render_message(path: Path, common: dict) -> tuple[str, str]:
    msg = load(path)
    const = snake_case(msg.name).upper()
    lines = [f"{const} = Message(",
             f"    {msg.name!r}, {msg.type!r}, valid={msg.valid!r}, flexible={msg.flexible!r},"]
    if msg.api_key is not None:
        listeners = f", listeners={msg.listeners!r}" if msg.listeners else ""
        lines.append(f"    api_key={msg.api_key}{listeners},")
    lines.append("    fields=[")
    lines.extend(render_field(f, "        ", set(common)) for f in msg.fields)
    lines.append("    ])")
    lines.append(f"{msg.name} = build_classes({const})")
    return msg.name, "\n".join(lines)


def render_common(path: Path) -> dict[str, str]:
    spec = read_json(path)
    out = {}
    for s in spec.get("commonStructs", []):
        fake = {"name": "X", "type": "[]" + s["name"], "versions": "0+", "fields": s["fields"]}
        f = _field(fake, {})
        body = "\n".join(render_field(x, "    ", set()) for x in f.fields)
        out[s["name"]] = f"{constant(s['name'])} = [\n{body}\n]"
    return out


GROUPED = {
    "headers": ("Request and response headers as Kafka 2.8 declares them.",
                ["RequestHeader", "ResponseHeader"]),
    "consumer_protocol": ("The consumer group protocol's subscription and assignment blobs.",
                          ["ConsumerProtocolSubscription", "ConsumerProtocolAssignment"]),
}


def write_module(module: str, doc: str, paths: list[Path]) -> None:
    common: dict = {}
    for p in paths:
        common.update(render_common(p))
    parts = [f'"""{doc}"""', "from kafkalike.protocol.schema import F, Message, build_classes", ""]
    parts += [c + "\n" for c in common.values()]
    parts += [render_message(p, common)[1] + "\n" for p in paths]
    (OUT / f"{module}.py").write_text("\n".join(parts).rstrip() + "\n")
    print("wrote", module)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("refdir")
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    ref = Path(args.refdir)
    for req in sorted(ref.glob("*Request.json")):
        base = req.name[: -len("Request.json")]
        if args.only and base not in args.only:
            continue
        spec = read_json(req)
        if "zkBroker" not in spec.get("listeners", []):
            continue
        write_module(snake_case(base),
                     f"{base} (API key {spec['apiKey']}): request and response as Kafka 2.8 declares them.",
                     [req, ref / f"{base}Response.json"])
    for module, (doc, names) in GROUPED.items():
        if not args.only or module in args.only:
            write_module(module, doc, [ref / f"{n}.json" for n in names])


if __name__ == "__main__":
    main()
