"""Key and value serializers: Kafka's built-in ones by name, and whatever a user brings.

A consumer in another language must read what these write, so the numeric ones are
Java's byte layouts (IntegerSerializer is 4 bytes big-endian, two's complement) and
None always stays None (a null key or value, never the bytes of "None").

`key.serializer` / `value.serializer` accept a name ("bytes", "str", "int", "json", ...,
or Java's class name), a plain callable taking the data, an object with Java's
`serialize(topic, data)` method, or such a class (instantiated without arguments, then
`configure(configs, is_key)` if it has one). resolve_serializer turns any of those into
one function `(topic, data) -> bytes | None`.
"""
from __future__ import annotations

import json
import struct
import uuid
from typing import Any, Callable, Mapping

from kafkalike.client.errors import ConfigError, SerializationError

SerializeFn = Callable[[str, Any], "bytes | None"]

_JAVA = "org.apache.kafka.common.serialization."


def _bytes(topic: str, data: Any) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise SerializationError(f"Can't convert value of class {type(data).__name__} to bytes: "
                             "configure a key.serializer / value.serializer that can")


def _string(encoding: str = "utf-8") -> SerializeFn:
    def serialize(topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, str):
            raise SerializationError(f"Can't convert value of class {type(data).__name__} to a string")
        return data.encode(encoding)
    return serialize


def _packer(fmt: str, kind: str, types: tuple) -> SerializeFn:
    packer = struct.Struct(fmt)

    def serialize(topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, types) or isinstance(data, bool):
            raise SerializationError(f"Can't convert value of class {type(data).__name__} to {kind}")
        try:
            return packer.pack(data)
        except struct.error as error:
            raise SerializationError(f"Can't serialize {data!r} as {kind}: {error}") from None
    return serialize


def _json(topic: str, data: Any) -> bytes | None:
    if data is None:
        return None
    try:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise SerializationError(f"Can't serialize data as JSON: {error}") from None


def _uuid(topic: str, data: Any) -> bytes | None:
    # Java's UUIDSerializer writes the canonical string form.
    if data is None:
        return None
    if not isinstance(data, uuid.UUID):
        raise SerializationError(f"Can't convert value of class {type(data).__name__} to a UUID")
    return str(data).encode("utf-8")


def _void(topic: str, data: Any) -> None:
    if data is not None:
        raise SerializationError("VoidSerializer only serializes None")
    return None


def _builtins(encoding: str) -> dict[str, SerializeFn]:
    string = _string(encoding)
    found = {
        "bytes": _bytes, "bytearray": _bytes, "str": string, "string": string,
        "short": _packer(">h", "a short (int16)", (int,)),
        "int": _packer(">i", "an integer (int32)", (int,)),
        "integer": _packer(">i", "an integer (int32)", (int,)),
        "long": _packer(">q", "a long (int64)", (int,)),
        "float": _packer(">f", "a float", (int, float)),
        "double": _packer(">d", "a double", (int, float)),
        "json": _json, "uuid": _uuid, "void": _void,
    }
    java = {"ByteArraySerializer": "bytes", "BytesSerializer": "bytes", "ByteBufferSerializer": "bytes",
            "StringSerializer": "str", "ShortSerializer": "short", "IntegerSerializer": "int",
            "LongSerializer": "long", "FloatSerializer": "float", "DoubleSerializer": "double",
            "UUIDSerializer": "uuid", "VoidSerializer": "void"}
    for simple, ours in java.items():
        found[_JAVA + simple] = found[ours]
    return found


BUILTIN_NAMES = tuple(_builtins("utf-8"))


def is_passthrough(fn: SerializeFn) -> bool:
    """True for the bytes serializer: the producer may skip calling it for bytes and None."""
    return fn is _bytes


def load_object(path: str) -> Any:
    """"package.module:Name" or "package.module.Name" to the object it names."""
    import importlib

    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"{path!r} is not a module path")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_plugin(kind: str, spec: Any, configs: Mapping[str, Any], is_key: bool,
                   builtins: Callable[[str], dict], builtin_names: tuple) -> Callable:
    """Turn a key/value (de)serializer setting (`kind` is "serializer" or "deserializer")
    into `(topic, data) -> value`: a built-in name, a dotted path or Java class name, a
    class (instantiated and configured), an object with serialize/deserialize, or a callable."""
    name = f"{'key' if is_key else 'value'}.{kind}"
    method_name = kind[:-1]  # serialize / deserialize
    if isinstance(spec, str):
        # Java's String(De)serializer reads key.<kind>.encoding, then <kind>.encoding.
        encoding = configs.get(f"{name}.encoding") or configs.get(f"{kind}.encoding") or "utf-8"
        table = builtins(encoding)
        found = table.get(spec) or table.get(spec.lower())
        if found is not None:
            return found
        try:
            spec = load_object(spec)
        except (ImportError, AttributeError) as error:
            raise ConfigError(f"Invalid value {spec} for configuration {name}: Class {spec} could not be "
                              f"found ({error}); built-in names are {', '.join(builtin_names[:12])}") from None
    if isinstance(spec, type):
        try:
            spec = spec()
        except Exception as error:
            raise ConfigError(f"Invalid value {spec.__name__} for configuration {name}: "
                              f"could not instantiate it: {error}") from None
        configure = getattr(spec, "configure", None)
        if callable(configure):
            configure(dict(configs), is_key)
    method = getattr(spec, method_name, None)
    if callable(method):
        return method
    if callable(spec):
        return lambda topic, data: spec(data)
    raise ConfigError(f"Invalid value {spec!r} for configuration {name}: "
                      f"expected a {kind} name, a callable or an object with {method_name}(topic, data)")


def resolve_serializer(spec: Any, configs: Mapping[str, Any], is_key: bool) -> SerializeFn:
    """Turn a key.serializer / value.serializer setting into `(topic, data) -> bytes | None`."""
    return resolve_plugin("serializer", spec, configs, is_key, _builtins, BUILTIN_NAMES)


__all__ = ["BUILTIN_NAMES", "SerializeFn", "is_passthrough", "load_object", "resolve_plugin",
           "resolve_serializer"]
