"""The message DSL: each API message is declared once, with versions per field.

A declaration is a tree of Field objects in the same shape as Kafka's JSON message
definitions (so a test can hold the two side by side). From it we build one slotted
dataclass per struct, and a reader and writer per (struct, version), compiled once and
cached, so encoding and decoding do no per-field version checks at run time.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, ClassVar

from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.types import ZERO_UUID, Reader, Writer

OPEN = 0x7FFF  # upper bound of an open version range like "3+"
MISSING = object()

PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
              "string", "bytes", "records", "uuid"}


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """"3+" -> (3, OPEN); "0-2" -> (0, 2); "5" -> (5, 5); "none" -> None."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), OPEN
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def snake_case(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


@dataclasses.dataclass(eq=False)
class Field:
    """One field of a message or struct, as Kafka's JSON declares it."""

    name: str                      # snake_case Python attribute name
    type: str                      # e.g. "int32", "string", "[]int32", "[]TopicData", "Leader"
    versions: str
    nullable: str = "none"         # nullableVersions
    tagged: str = "none"           # taggedVersions
    tag: int | None = None
    default: Any = MISSING         # the JSON "default", already a Python value
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None
    flexible: str | None = None    # field-level flexibleVersions override ("none" in headers)
    fields: list["Field"] | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def present_in(self, version: int) -> bool:
        return _within(parse_versions(self.versions), version)

    def nullable_in(self, version: int) -> bool:
        return _within(parse_versions(self.nullable), version)

    def tagged_in(self, version: int) -> bool:
        return _within(parse_versions(self.tagged), version)


def F(name: str, type: str, versions: str, **kw) -> Field:
    return Field(name, type, versions, **kw)


@dataclasses.dataclass(eq=False)
class Message:
    """A top-level declaration: an API request or response, a header, or a data blob."""

    name: str
    type: str                      # "request" | "response" | "header" | "data"
    valid: str
    flexible: str
    fields: list[Field]
    api_key: int | None = None
    listeners: tuple[str, ...] = ()

    @property
    def valid_range(self) -> tuple[int, int]:
        return parse_versions(self.valid)

    def is_flexible(self, version: int) -> bool:
        return _within(parse_versions(self.flexible), version)


class UnsupportedVersionError(ValueError):
    """Asked to encode or decode a version the declaration does not have."""


class MessageData:
    """Base of every generated message class: encode/decode at a version."""

    SCHEMA: ClassVar[Message]
    API_KEY: ClassVar[int | None] = None

    def encode(self, version: int) -> bytes:
        w = Writer()
        self.encode_into(w, version)
        return w.getvalue()

    def encode_into(self, w: Writer, version: int) -> None:
        _codec(type(self), version)[1](w, self)

    @classmethod
    def decode(cls, buf, version: int, pos: int = 0, end: int | None = None):
        r = buf if isinstance(buf, Reader) else Reader(buf, pos, end)
        return _codec(cls, version)[0](r)

    @classmethod
    def read_from(cls, r: Reader, version: int):
        return _codec(cls, version)[0](r)


def _field_default(f: Field, struct_classes: dict[str, type]) -> Callable[[], Any]:
    """A factory for the field's default value (Kafka's generator rules)."""
    if f.default is not MISSING:
        d = f.default
        return lambda: d
    if f.is_array:
        return list
    t = f.type
    if t in ("bool",):
        return lambda: False
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return lambda: 0
    if t == "float64":
        return lambda: 0.0
    if t == "string":
        return lambda: ""
    if t == "bytes":
        return lambda: b""
    if t == "records":
        return lambda: None
    if t == "uuid":
        return lambda: ZERO_UUID
    cls = struct_classes[t]
    return cls


def build_classes(msg: Message) -> type:
    """Create the dataclass for `msg` and one for each nested struct.

    Nested struct classes hang off the top class by their Kafka type name
    (ProduceRequest.TopicProduceData), as Kafka's generated Java nests them.
    """
    struct_classes: dict[str, type] = {}

    def make(name: str, fields: list[Field], base: tuple) -> type:
        for f in fields:
            if f.is_struct and f.element_type not in struct_classes:
                struct_classes[f.element_type] = make(f.element_type, f.fields or [], (StructData,))
        spec = []
        for f in fields:
            factory = _field_default(f, struct_classes)
            spec.append((f.name, Any, dataclasses.field(default_factory=factory)))
        cls = dataclasses.make_dataclass(name, spec, bases=base, slots=True, repr=True, eq=True)
        cls.FIELDS = fields
        cls.MESSAGE = msg
        return cls

    top = make(msg.name, msg.fields, (MessageData,))
    top.SCHEMA = msg
    top.API_KEY = msg.api_key
    for name, cls in struct_classes.items():
        setattr(top, name, cls)
        cls.TOP = top
    top.STRUCTS = struct_classes
    top.TOP = top
    return top


class StructData:
    """Base of nested struct classes."""


# -- compiled codecs -----------------------------------------------------------------


def _primitive_codec(f: Field, version: int, flexible: bool):
    t = f.element_type
    nullable = f.nullable_in(version) and not f.is_array
    compact = flexible and not (f.flexible is not None and parse_versions(f.flexible) is None)
    if t == "string":
        if compact:
            return (lambda r: r.compact_string(nullable)), _nullable_guard(f, version, nullable, Writer.compact_string)
        return (lambda r: r.string(nullable)), _nullable_guard(f, version, nullable, Writer.string)
    if t == "bytes":
        if compact:
            return (lambda r: r.compact_bytes(nullable)), _nullable_guard(f, version, nullable, Writer.compact_bytes)
        return (lambda r: r.bytes(nullable)), _nullable_guard(f, version, nullable, Writer.bytes)
    if t == "records":
        writer = Writer.compact_bytes if compact else Writer.bytes
        return (lambda r: r.records(compact)), _nullable_guard(f, version, nullable, writer)
    return getattr(Reader, t), getattr(Writer, t)


def _nullable_guard(f: Field, version: int, nullable: bool, write):
    if nullable:
        return write

    def guarded(w, v):
        if v is None:
            raise ValueError(f"field {f.name} is not nullable in version {version}")
        write(w, v)
    return guarded


def _field_codec(f: Field, cls: type, version: int, flexible: bool):
    """(read, write) for one field at one version."""
    if f.is_struct:
        sub = cls.TOP.STRUCTS[f.element_type]
        elem_read, elem_write = _codec(sub, version)
    else:
        elem_read, elem_write = _primitive_codec(f, version, flexible)
    if not f.is_array:
        return elem_read, elem_write

    nullable = f.nullable_in(version)
    name = f.name

    def read_array(r: Reader):
        n = r.array_length(flexible, nullable)
        if n < 0:
            return None
        return [elem_read(r) for _ in range(n)]

    def write_array(w: Writer, items):
        if items is None:
            if not nullable:
                raise ValueError(f"field {name} is not nullable in version {version}")
            w.array_length(None, flexible)
            return
        w.array_length(len(items), flexible)
        for item in items:
            elem_write(w, item)

    return read_array, write_array


_codec_cache: dict[tuple[type, int], tuple[Callable, Callable]] = {}


def _codec(cls: type, version: int) -> tuple[Callable, Callable]:
    key = (cls, version)
    codec = _codec_cache.get(key)
    if codec is None:
        codec = _compile(cls, version)
        _codec_cache[key] = codec
    return codec


def _compile(cls: type, version: int) -> tuple[Callable, Callable]:
    msg: Message = cls.MESSAGE
    lo, hi = msg.valid_range
    if not lo <= version <= hi:
        raise UnsupportedVersionError(f"{msg.name} has no version {version} (valid {msg.valid})")
    flexible = msg.is_flexible(version)
    plain: list[tuple[str, Callable, Callable]] = []
    tagged: dict[int, tuple[str, Callable, Callable, Callable]] = {}
    for f in cls.FIELDS:
        if not f.present_in(version):
            continue
        read, write = _field_codec(f, cls, version, flexible)
        if flexible and f.tagged_in(version):
            tagged[f.tag] = (f.name, read, write, _field_default(f, cls.TOP.STRUCTS))
        else:
            plain.append((f.name, read, write))
    names = [p[0] for p in plain]
    readers = [p[1] for p in plain]
    writers = [(p[0], p[2]) for p in plain]
    tags_sorted = sorted(tagged.items())

    def read(r: Reader):
        values = {name: rd(r) for name, rd in zip(names, readers)}
        obj = cls(**values)
        if flexible:
            _read_tagged(r, obj, tagged)
        return obj

    def write(w: Writer, obj) -> None:
        for name, wr in writers:
            wr(w, getattr(obj, name))
        if flexible:
            _write_tagged(w, obj, tags_sorted)

    return read, write


def _read_tagged(r: Reader, obj, tagged: dict) -> None:
    count = r.uvarint()
    last = -1
    for _ in range(count):
        tag = r.uvarint()
        if tag <= last:
            raise ProtocolDecodeError(f"tagged fields out of order: {tag} after {last}")
        last = tag
        size = r.uvarint()
        if size > r.remaining():
            raise ProtocolDecodeError(f"tagged field {tag} of {size} bytes runs past the end")
        known = tagged.get(tag)
        if known is None:
            r.skip(size)
            continue
        end = r.pos + size
        sub = Reader(r.buf, r.pos, end)
        setattr(obj, known[0], known[1](sub))
        if sub.pos != end:
            raise ProtocolDecodeError(f"tagged field {tag} did not consume its {size} bytes")
        r.pos = end


def _write_tagged(w: Writer, obj, tags_sorted) -> None:
    present = []
    for tag, (name, _read, write, default) in tags_sorted:
        value = getattr(obj, name)
        if value != default():
            sub = Writer()
            write(sub, value)
            present.append((tag, sub.getvalue()))
    w.uvarint(len(present))
    for tag, data in present:
        w.uvarint(tag)
        w.uvarint(len(data))
        w.raw(data)


def empty_tagged_fields(w: Writer) -> None:
    w.uvarint(0)


__all__ = ["F", "Field", "Message", "MessageData", "StructData", "build_classes",
           "parse_versions", "snake_case", "UnsupportedVersionError", "OPEN"]
