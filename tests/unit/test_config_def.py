"""The one ConfigDef engine under the broker's, the topics' and the clients' config tables."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kafkalike.broker.config import BROKER_CONFIG
from kafkalike.client import errors as client_errors
from kafkalike.client.config import CONSUMER_CONFIG, PRODUCER_CONFIG
from kafkalike.common.config_def import (
    NO_DEFAULT, ConfigError, ConfigKey, ConfigType, Password, api_version, at_least, between, each_one_of,
    errors_as, one_of, parse_all, parse_value, split_list,
)
from kafkalike.storage import errors as storage_errors
from kafkalike.storage.config import CONFIG_KEYS

PACKAGE = Path(__file__).resolve().parents[2] / "kafkalike"


def message(ctype: ConfigType, value, name: str = "k") -> str:
    with pytest.raises(ConfigError) as caught:
        parse_value(name, ctype, value)
    return str(caught.value)


@pytest.mark.parametrize("ctype,text,expected", [
    (ConfigType.INT, " -12 ", -12),
    (ConfigType.INT, "+7", 7),
    (ConfigType.SHORT, "32767", 32767),
    (ConfigType.LONG, str(2**63 - 1), 2**63 - 1),
    (ConfigType.DOUBLE, "0.25d", 0.25),
    (ConfigType.DOUBLE, "1e3", 1000.0),
    (ConfigType.DOUBLE, ".5", 0.5),
    (ConfigType.BOOLEAN, " TRUE ", True),
    (ConfigType.STRING, "  x ", "x"),
    (ConfigType.LIST, " a , b,c ", ("a", "b", "c")),
    (ConfigType.LIST, "  ", ()),
    (ConfigType.CLASS, " org.example.Policy ", "org.example.Policy"),
])
def test_text_is_trimmed_and_read_with_javas_grammar(ctype, text, expected):
    assert parse_value("k", ctype, text) == expected


@pytest.mark.parametrize("ctype,text", [
    (ConfigType.INT, "1_000"), (ConfigType.INT, "1.0"), (ConfigType.INT, "2147483648"),
    (ConfigType.SHORT, "32768"), (ConfigType.LONG, "١٢"), (ConfigType.DOUBLE, "inf"),
    (ConfigType.DOUBLE, "1_0.5"), (ConfigType.DOUBLE, ""),
])
def test_numbers_python_reads_but_java_does_not_are_refused(ctype, text):
    assert message(ctype, text) == f"Invalid value {text} for configuration k: Not a number of type {ctype.name}"


def test_python_values_are_taken_as_the_matching_java_type():
    assert parse_value("k", ConfigType.INT, 5) == 5
    assert parse_value("k", ConfigType.DOUBLE, 1) == 1.0
    assert parse_value("k", ConfigType.BOOLEAN, False) is False
    assert parse_value("k", ConfigType.STRING, 1) == "1"
    assert parse_value("k", ConfigType.LIST, ["a", "b"]) == ("a", "b")
    assert parse_value("k", ConfigType.PASSWORD, "s") == Password("s")
    assert parse_value("k", ConfigType.CLASS, dict) is dict
    assert parse_value("k", ConfigType.INT, None) is None
    assert message(ConfigType.INT, True) == \
        "Invalid value true for configuration k: Expected value to be a 32-bit integer, but it was a Boolean"
    assert message(ConfigType.LONG, 1.5) == \
        "Invalid value 1.5 for configuration k: Expected value to be a 64-bit integer, but it was a float"
    assert message(ConfigType.INT, 2**31) == f"Invalid value {2**31} for configuration k: Not a number of type INT"
    assert message(ConfigType.DOUBLE, True) == \
        "Invalid value true for configuration k: Expected value to be a double, but it was a Boolean"
    assert message(ConfigType.STRING, 1.5) == \
        "Invalid value 1.5 for configuration k: Expected value to be a string, but it was a float"
    assert message(ConfigType.BOOLEAN, 1) == \
        "Invalid value 1 for configuration k: Expected value to be either true or false"
    assert message(ConfigType.LIST, 3) == "Invalid value 3 for configuration k: Expected a comma separated list."


def test_validators_speak_kafkas_words():
    def refusal(validator, value) -> str:
        with pytest.raises(ConfigError) as caught:
            validator("k", value)
        return str(caught.value)
    assert refusal(at_least(14), 13) == "Invalid value 13 for configuration k: Value must be at least 14"
    assert refusal(between(0, 1), 1.5) == "Invalid value 1.5 for configuration k: Value must be no more than 1"
    assert refusal(between(0, 1), -0.5) == "Invalid value -0.5 for configuration k: Value must be at least 0"
    assert refusal(one_of("a", "b"), "c") == "Invalid value c for configuration k: String must be one of: a, b"
    assert refusal(each_one_of("compact", "delete"), ("delete", "purge")) == \
        "Invalid value purge for configuration k: String must be one of: compact, delete"
    assert refusal(api_version, "9.9") == \
        "Invalid value 9.9 for configuration k: Version `9.9` is not a valid version"
    one_of("PLAINTEXT", "SSL", case_sensitive=False)("k", "ssl")
    api_version("k", "2.8.1")
    for validator in (at_least(1), between(0, 1), one_of("a"), each_one_of("a"), api_version):
        validator("k", None)  # a nullable key left unset


def test_none_is_a_value_only_where_null_is_the_default():
    assert ConfigKey("k", ConfigType.STRING, None).parse(None) is None
    with pytest.raises(ConfigError, match="^Invalid value null for configuration k: Value must be non-null$"):
        ConfigKey("k", ConfigType.INT, 1).parse(None)


def test_errors_name_the_reported_key():
    key = ConfigKey("segment.bytes", ConfigType.INT, 1, validator=at_least(14))
    with pytest.raises(ConfigError, match="^Invalid value 2 for configuration log.segment.bytes: "):
        key.parse("2", reported_name="log.segment.bytes")


def test_parse_all_fills_defaults_and_wants_required_keys():
    keys = (ConfigKey("a", ConfigType.INT, 1), ConfigKey("b", ConfigType.STRING, NO_DEFAULT))
    assert parse_all(keys, {"b": "x", "other": "kept by the caller"}) == {"a": 1, "b": "x"}
    with pytest.raises(ConfigError, match='^Missing required configuration "b" which has no default value.$'):
        parse_all(keys, {})


def test_split_list():
    assert split_list(" /a , /b ,") == ("/a", "/b", "")


@pytest.mark.parametrize("layer_error,base", [(storage_errors.ConfigError, storage_errors.StorageError),
                                              (client_errors.ConfigError, client_errors.KafkaError)])
def test_layer_config_errors_are_the_common_one_and_nothing_more(layer_error, base):
    assert issubclass(layer_error, ConfigError) and issubclass(layer_error, base)
    assert set(vars(layer_error)) <= {"__module__", "__doc__", "__qualname__"}
    with pytest.raises(layer_error, match="^Invalid value x for configuration k: Not a number of type INT$"):
        with errors_as(layer_error):
            parse_value("k", ConfigType.INT, "x")
    error = layer_error("m")
    assert error.error_code == 40 and error.java_name == "org.apache.kafka.common.config.ConfigException"


@pytest.mark.parametrize("key", [*PRODUCER_CONFIG.values(), *CONSUMER_CONFIG.values(), *CONFIG_KEYS,
                                 *BROKER_CONFIG.values()], ids=lambda key: key.name)
def test_every_default_passes_its_own_rules(key):
    if key.required or key.default is None:
        return
    parsed = key.parse(key.default)
    assert parsed == (tuple(key.default) if isinstance(key.default, list) else key.default)


def _code_strings(path: Path) -> list[str]:
    """Every string literal in a module but its docstrings (prose may quote Kafka's words)."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def _modules_saying(pattern: re.Pattern[str], owner: str, more_than: int = 0) -> list[str]:
    """Modules other than `owner` with more than `more_than` distinct literals matching `pattern`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name != owner and len({t for t in _code_strings(path) if pattern.search(t)}) > more_than:
            found.append(name)
    return found


def test_one_engine_one_version_table():
    """Kafka's parse and range wording lives in the engine only, and the version names in
    versions.py only (a feature gate may name the one or two versions it compares with)."""
    wording = re.compile("Not a number of type|Expected value to be|Value must be at least|String must be one of")
    assert _modules_saying(wording, "common/config_def.py") == []
    version = re.compile(r"^(\d+\.\d+(\.\d+)?-IV\d|0\.(8|9|10|11)\.\d)$")
    assert _modules_saying(version, "common/versions.py", more_than=2) == []
