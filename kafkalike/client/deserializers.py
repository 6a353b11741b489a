"""Key and value deserializers: the mirror of serializers.py, for the consumer.

What another client wrote with Java's serializers must read back as the same value,
so the numeric ones read Java's byte layouts (IntegerDeserializer: 4 bytes big-endian)
and a null key or value is None whatever the deserializer. `key.deserializer` /
`value.deserializer` accept a built-in name ("bytes", "str", "int", "json", ... or
Java's class name), a plain callable taking the bytes, an object with Java's
`deserialize(topic, data)` method, or such a class. resolve_deserializer turns any of
those into one function `(topic, data) -> value`.
"""
from __future__ import annotations

import json
import struct
import uuid
from typing import Any, Callable, Mapping

from kafkalike.client.errors import SerializationError
from kafkalike.client.serializers import resolve_plugin

DeserializeFn = Callable[[str, "bytes | None"], Any]

_JAVA = "org.apache.kafka.common.serialization."


def _bytes(topic: str, data: bytes | None) -> bytes | None:
    return data


def _string(encoding: str) -> DeserializeFn:
    def deserialize(topic: str, data: bytes | None) -> str | None:
        if data is None:
            return None
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as error:
            raise SerializationError(f"Error when deserializing byte[] to string due to unsupported "
                                     f"encoding {encoding}: {error}") from None
    return deserialize


def _unpacker(fmt: str, kind: str) -> DeserializeFn:
    unpacker = struct.Struct(fmt)

    def deserialize(topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        if len(data) != unpacker.size:
            raise SerializationError(f"Size of data received by {kind} is not {unpacker.size}")
        return unpacker.unpack(data)[0]
    return deserialize


def _json(topic: str, data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError as error:
        raise SerializationError(f"Can't deserialize data as JSON: {error}") from None


def _uuid(topic: str, data: bytes | None) -> uuid.UUID | None:
    if data is None:
        return None
    try:
        return uuid.UUID(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SerializationError(f"Error parsing data into UUID: {error}") from None


def _void(topic: str, data: bytes | None) -> None:
    if data is not None:
        raise SerializationError("Data should be null for a VoidDeserializer.")
    return None


def _builtins(encoding: str) -> dict[str, DeserializeFn]:
    string = _string(encoding)
    found: dict[str, DeserializeFn] = {
        "bytes": _bytes, "bytearray": _bytes, "str": string, "string": string,
        "short": _unpacker(">h", "ShortDeserializer"),
        "int": _unpacker(">i", "IntegerDeserializer"), "integer": _unpacker(">i", "IntegerDeserializer"),
        "long": _unpacker(">q", "LongDeserializer"),
        "float": _unpacker(">f", "FloatDeserializer"), "double": _unpacker(">d", "DoubleDeserializer"),
        "json": _json, "uuid": _uuid, "void": _void,
    }
    java = {"ByteArrayDeserializer": "bytes", "BytesDeserializer": "bytes", "ByteBufferDeserializer": "bytes",
            "StringDeserializer": "str", "ShortDeserializer": "short", "IntegerDeserializer": "int",
            "LongDeserializer": "long", "FloatDeserializer": "float", "DoubleDeserializer": "double",
            "UUIDDeserializer": "uuid", "VoidDeserializer": "void"}
    for simple, ours in java.items():
        found[_JAVA + simple] = found[ours]
    return found


BUILTIN_NAMES = tuple(_builtins("utf-8"))


def is_passthrough(fn: DeserializeFn) -> bool:
    """True for the bytes deserializer: the fetcher may skip calling it."""
    return fn is _bytes


def resolve_deserializer(spec: Any, configs: Mapping[str, Any], is_key: bool) -> DeserializeFn:
    """Turn a key.deserializer / value.deserializer setting into `(topic, data) -> value`."""
    return resolve_plugin("deserializer", spec, configs, is_key, _builtins, BUILTIN_NAMES)


__all__ = ["BUILTIN_NAMES", "DeserializeFn", "is_passthrough", "resolve_deserializer"]
