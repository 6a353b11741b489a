"""One ConfigDef engine for every config table: the broker's, the topics' and the clients'.

Kafka has one ConfigDef behind KafkaConfig, LogConfig, ProducerConfig and ConsumerConfig,
so a value means the same thing and is refused with the same words wherever it is set:
"Invalid value abc for configuration num.partitions: Not a number of type INT". The
tables (kafkalike.broker.config, kafkalike.storage.config, kafkalike.client.config) are
lists of `ConfigKey`s on this engine plus their own cross-key rules.

Values come as text (server.properties, ZooKeeper's JSON, the tools) or as Python
values (a client's dict, the broker's parsed defaults handed to topics); both are
parsed the way ConfigDef.parseType parses a string or a typed Java value.
"""
from __future__ import annotations

import contextlib
import enum
import math
import numbers
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Iterable, Iterator, Mapping

from kafkalike.common.versions import resolve_api_version

SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DOUBLE_MAX = sys.float_info.max


class ConfigError(ValueError):
    """A config value Kafka would refuse (Java's ConfigException); the message names the key.

    The storage and client layers subclass it only so that their own `except` clauses
    (StorageError, KafkaError) keep catching it; the wording and the code are these.
    """

    error_code = 40  # INVALID_CONFIG, what a broker answers for it
    java_name = "org.apache.kafka.common.config.ConfigException"


@contextlib.contextmanager
def errors_as(layer_error: type[ConfigError]) -> Iterator[None]:
    """Let the engine's ConfigError leave a layer as that layer's subclass, so the layer's
    own callers (`except StorageError`, `except KafkaError`) still catch it."""
    try:
        yield
    except ConfigError as e:
        if isinstance(e, layer_error):
            raise
        raise layer_error(*e.args) from None


def invalid(name: str, value: Any, message: str | None = None) -> ConfigError:
    """ConfigException(name, value, message): the value printed as Kafka prints it."""
    shown = value if isinstance(value, str) else "null" if value is None else java_string(value)
    text = f"Invalid value {shown} for configuration {name}"
    return ConfigError(text + (f": {message}" if message else ""))


class ConfigType(enum.Enum):
    """ConfigDef types; the values are DescribeConfigs' ConfigType codes (v3+)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class UpdateMode(str, enum.Enum):
    """Kafka's "Update Mode" column: only read-only keys need a restart to change."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


@dataclass(frozen=True)
class Password:
    """A secret value; printing it never shows the secret, as Kafka's Password class."""

    value: str

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__


class _Required:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


# The default of a key the user must set (ConfigDef.NO_DEFAULT_VALUE).
NO_DEFAULT: Any = _Required()

# Raises ConfigError (through `invalid`) when a parsed value breaks the key's rule.
Validator = Callable[[str, Any], None]


# ---------------------------------------------------------------- value rendering

def java_double(d: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, otherwise '1.7976931348623157E308'."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    if 1e-3 <= abs(d) < 1e7:
        return repr(d)
    sign, digits, exponent = Decimal(repr(d)).as_tuple()
    text = "".join(map(str, digits))
    power = len(digits) + int(exponent) - 1
    text = text.rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def java_string(value: Any) -> str | None:
    """ConfigDef.convertToString: how Kafka prints a parsed value (DescribeConfigs, errors)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, Password):
        return value.value
    return str(value)


# ---------------------------------------------------------------- parsing

# Integer.parseInt / Double.parseDouble grammar: Python's int() and float() would also
# take "1_000", "inf" or non-ASCII digits, which Kafka refuses.
INTEGER_PATTERN = re.compile(r"[+-]?[0-9]+\Z")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?\Z")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_INTEGERS = {ConfigType.SHORT: (SHORT_MIN, SHORT_MAX, 16), ConfigType.INT: (INT_MIN, INT_MAX, 32),
             ConfigType.LONG: (LONG_MIN, LONG_MAX, 64)}


def split_list(text: str) -> tuple[str, ...]:
    """A LIST value given as text: trimmed, split on commas with the blanks around them."""
    text = text.strip()
    return tuple(_LIST_SPLIT.split(text)) if text else ()


def _type_name(value: Any) -> str:
    return "Boolean" if isinstance(value, bool) else type(value).__name__


def parse_value(name: str, ctype: ConfigType, value: Any) -> Any:
    """ConfigDef.parseType: text is trimmed and read with Java's grammar, Python values are
    taken as the matching Java type would be. None stays None (nullability is the key's)."""
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else None
    if ctype is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise invalid(name, value, "Expected value to be either true or false")
    if ctype in _INTEGERS:
        low, high, bits = _INTEGERS[ctype]
        if text is not None:
            parsed = int(text) if INTEGER_PATTERN.match(text) else None
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            parsed = int(value)
        else:
            raise invalid(name, value, f"Expected value to be a {bits}-bit integer, but it was a "
                          f"{_type_name(value)}")
        if parsed is None or not low <= parsed <= high:
            raise invalid(name, value, f"Not a number of type {ctype.name}")
        return parsed
    if ctype is ConfigType.DOUBLE:
        if text is not None:
            if not _DOUBLE.match(text):
                raise invalid(name, value, "Not a number of type DOUBLE")
            return float(text[:-1] if text[-1] in "fFdD" else text)
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        raise invalid(name, value, f"Expected value to be a double, but it was a {_type_name(value)}")
    if ctype in (ConfigType.STRING, ConfigType.PASSWORD):
        if ctype is ConfigType.PASSWORD and isinstance(value, Password):
            return value
        if text is None and isinstance(value, int) and not isinstance(value, bool):
            text = str(value)  # acks=1 and the like, as a Python user writes them
        if text is None:
            raise invalid(name, value, f"Expected value to be a string, but it was a {_type_name(value)}")
        return Password(text) if ctype is ConfigType.PASSWORD else text
    if ctype is ConfigType.LIST:
        if text is not None:
            return split_list(text)
        if isinstance(value, (list, tuple)):
            return tuple(value)
        raise invalid(name, value, "Expected a comma separated list.")
    if ctype is ConfigType.CLASS:
        return value if text is None else text  # a class or callable object stands for itself
    raise AssertionError(ctype)


# ---------------------------------------------------------------- validators
# Each is called with the key's name and its parsed value; None (a nullable key left
# unset) always passes, as Kafka's validators never see a null they were not built for.

def at_least(minimum: float) -> Validator:
    """Range.atLeast."""
    def check(name: str, value: Any) -> None:
        if value is not None and value < minimum:
            raise invalid(name, value, f"Value must be at least {minimum}")
    return check


def between(low: float, high: float) -> Validator:
    """Range.between."""
    def check(name: str, value: Any) -> None:
        if value is None:
            return
        if value < low:
            raise invalid(name, value, f"Value must be at least {low}")
        if value > high:
            raise invalid(name, value, f"Value must be no more than {high}")
    return check


def one_of(*choices: str, case_sensitive: bool = True) -> Validator:
    """ValidString.in (or CaseInsensitiveValidString.in); the message lists the choices as declared."""
    allowed = set(choices) if case_sensitive else {c.lower() for c in choices}

    def check(name: str, value: Any) -> None:
        if value is None:
            return
        if (value if case_sensitive else value.lower()) not in allowed:
            raise invalid(name, value, f"String must be one of: {', '.join(choices)}")
    return check


def each_one_of(*choices: str) -> Validator:
    """ValidList.in: every element of a list must be one of the choices; the error names the element."""
    element = one_of(*choices)

    def check(name: str, value: Any) -> None:
        for item in value or ():
            element(name, item)
    return check


def api_version(name: str, value: Any) -> None:
    """An inter-broker protocol or message format version ('2.8', '2.8.1', '2.8-IV1', ...)."""
    if value is None:
        return
    try:
        resolve_api_version(value)
    except ValueError as e:
        raise invalid(name, value, str(e)) from None


# ---------------------------------------------------------------- keys

@dataclass(frozen=True)
class ConfigKey:
    """One key as Kafka's ConfigDef declares it; the flags past `validator` matter to the broker.

    `default` is a parsed value; None is Kafka's null (and then None is also a value the
    user may give); NO_DEFAULT means the key is required. `synonym` names the broker key
    a topic key takes its default from (Kafka's TopicConfigSynonyms).
    """

    name: str
    type: ConfigType
    default: Any
    doc: str = ""
    validator: Validator | None = None
    update_mode: UpdateMode = UpdateMode.READ_ONLY
    internal: bool = False  # defined but hidden from docs and DescribeConfigs (2.8's KRaft keys)
    synonym: str | None = None

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def read_only(self) -> bool:
        return self.update_mode is UpdateMode.READ_ONLY

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    @property
    def attr(self) -> str:
        """The key as a Python attribute name: segment.bytes -> segment_bytes."""
        return self.name.replace(".", "_")

    def parse(self, value: Any, reported_name: str | None = None) -> Any:
        """Parse and validate one value; errors name `reported_name` (e.g. a broker synonym) if given."""
        name = reported_name or self.name
        if value is None and self.default is not None:
            raise invalid(name, None, "Value must be non-null")
        parsed = parse_value(name, self.type, value)
        if self.validator is not None:
            self.validator(name, parsed)
        return parsed


def parse_all(keys: Iterable[ConfigKey], props: Mapping[str, Any]) -> dict[str, Any]:
    """ConfigDef.parse: every key's value, parsed from `props` or its default; keys not in
    the table are left to the caller (Kafka keeps and logs them)."""
    values: dict[str, Any] = {}
    for key in keys:
        if key.name in props:
            values[key.name] = key.parse(props[key.name])
        elif key.required:
            raise ConfigError(f'Missing required configuration "{key.name}" which has no default value.')
        else:
            values[key.name] = key.default
    return values
