"""Consumer configuration defaults and checks, and the deserializers' byte layouts."""
from __future__ import annotations

import struct
import uuid

import pytest

from kafkalike.client.config import consumer_config
from kafkalike.client.deserializers import resolve_deserializer
from kafkalike.client.errors import ConfigError, SerializationError
from kafkalike.client.serializers import resolve_serializer


def test_defaults_are_kafkas_and_auto_commit_is_off_without_a_group():
    cfg = consumer_config({"bootstrap.servers": "h:9092"})
    assert (cfg["auto.offset.reset"], cfg["max.poll.records"], cfg["fetch.max.wait.ms"]) == ("latest", 500, 500)
    assert cfg["enable.auto.commit"] is False and cfg["group.id"] is None
    assert consumer_config({"bootstrap.servers": "h:9092", "group.id": "g"})["enable.auto.commit"] is True


def test_bad_values_name_the_key():
    with pytest.raises(ConfigError, match="auto.offset.reset"):
        consumer_config({"bootstrap.servers": "h:9092", "auto.offset.reset": "smallest"})
    with pytest.raises(ConfigError, match="enable.auto.commit"):
        consumer_config({"bootstrap.servers": "h:9092", "enable.auto.commit": "true"})


@pytest.mark.parametrize("name,value", [("int", -7), ("long", 2**40), ("short", 3), ("double", 1.5),
                                        ("str", "héllo"), ("json", {"a": [1, None]}), ("uuid", uuid.uuid4())])
def test_deserializers_read_what_serializers_wrote(name, value):
    data = resolve_serializer(name, {}, False)("t", value)
    assert resolve_deserializer(name, {}, False)("t", data) == value
    assert resolve_deserializer(name, {}, False)("t", None) is None


def test_java_names_and_wrong_sizes():
    fn = resolve_deserializer("org.apache.kafka.common.serialization.IntegerDeserializer", {}, True)
    assert fn("t", struct.pack(">i", 42)) == 42
    with pytest.raises(SerializationError, match="is not 4"):
        fn("t", b"\x00\x01")
    assert resolve_deserializer(lambda data: data[::-1], {}, False)("t", b"ab") == b"ba"
