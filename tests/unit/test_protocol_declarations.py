"""Every declaration matches Kafka 2.8's JSON definition, field for field."""
from __future__ import annotations

import pytest

from kafkalike.protocol import api
from kafkalike.protocol.jsonspec import load, read_json
from kafkalike.coordinator import schemas as offsets_topic_schemas
from kafkalike.coordinator.transaction import records as transaction_log_records
from kafkalike.protocol.messages import consumer_protocol, headers
from kafkalike.protocol.schema import MISSING, Field, Message
from tests.reference import reference_dir

MESSAGES = reference_dir() / "kafka-2.8-messages"


def _ours() -> dict[str, Message]:
    found = {}
    for spec in api.APIS.values():
        found[spec.request.SCHEMA.name] = spec.request.SCHEMA
        found[spec.response.SCHEMA.name] = spec.response.SCHEMA
    for module in (headers, consumer_protocol, offsets_topic_schemas):
        for value in vars(module).values():
            if isinstance(value, Message):
                found[value.name] = value
    for declared in (transaction_log_records.TransactionLogKey, transaction_log_records.TransactionLogValue):
        found[declared.SCHEMA.name] = declared.SCHEMA     # __transaction_state's record classes
    return found


OURS = _ours()


def _expected_files():
    names = []
    for path in sorted(MESSAGES.glob("*.json")):
        spec = read_json(path)
        if spec["type"] == "request" and "zkBroker" not in spec.get("listeners", []):
            continue
        if spec["type"] == "response":
            req = MESSAGES / path.name.replace("Response.json", "Request.json")
            if "zkBroker" not in read_json(req).get("listeners", []):
                continue
        if spec["type"] == "data" and not spec["name"].startswith("ConsumerProtocol"):
            continue
        names.append(path)
    return names


FILES = _expected_files()
INTERNAL = [reference_dir() / "kafka-internal-topics" / f"{n}.json"
            for n in ("OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
                      "TransactionLogKey", "TransactionLogValue")]

FIELD_ATTRS = ("name", "type", "versions", "nullable", "tagged", "tag", "default",
               "ignorable", "map_key", "entity_type", "flexible")


def diff_fields(ours: list[Field], theirs: list[Field], where: str) -> list[str]:
    problems = []
    if [f.name for f in ours] != [f.name for f in theirs]:
        return [f"{where}: fields {[f.name for f in ours]} != {[f.name for f in theirs]}"]
    for a, b in zip(ours, theirs):
        here = f"{where}.{a.name}"
        for attr in FIELD_ATTRS:
            va, vb = getattr(a, attr), getattr(b, attr)
            if va is MISSING or vb is MISSING:
                if va is not vb:
                    problems.append(f"{here}: {attr} {va!r} != {vb!r}")
            elif va != vb or type(va) is not type(vb):
                problems.append(f"{here}: {attr} {va!r} != {vb!r}")
        if (a.fields is None) != (b.fields is None):
            problems.append(f"{here}: struct-ness differs")
        elif a.fields is not None:
            problems += diff_fields(a.fields, b.fields, here)
    return problems


def diff_messages(ours: Message, theirs: Message) -> list[str]:
    problems = []
    for attr in ("name", "type", "valid", "flexible", "api_key"):
        if getattr(ours, attr) != getattr(theirs, attr):
            problems.append(f"{theirs.name}: {attr} {getattr(ours, attr)!r} != {getattr(theirs, attr)!r}")
    if theirs.type == "request" and ours.listeners != theirs.listeners:
        problems.append(f"{theirs.name}: listeners differ")
    return problems + diff_fields(ours.fields, theirs.fields, theirs.name)


def test_every_internal_topic_schema_of_the_reference_is_checked():
    assert sorted(INTERNAL) == sorted((reference_dir() / "kafka-internal-topics").glob("*.json"))


def test_reference_is_complete():
    # 56 zkBroker APIs, their responses, two headers, two consumer protocol blobs.
    assert len(FILES) == 56 * 2 + 4


@pytest.mark.parametrize("path", FILES + INTERNAL, ids=lambda p: p.stem)
def test_declaration_matches_kafka_json(path):
    theirs = load(path)
    assert theirs.name in OURS, f"no declaration for {theirs.name}"
    assert diff_messages(OURS[theirs.name], theirs) == []


def test_the_check_catches_a_mismatch():
    theirs = load(MESSAGES / "ProduceRequest.json")
    ours = OURS["ProduceRequest"]
    import copy
    broken = copy.deepcopy(ours)
    broken.fields[3].fields[1].fields[1].nullable = "none"   # records no longer nullable
    assert any("records: nullable" in p for p in diff_messages(broken, theirs))
    broken = copy.deepcopy(ours)
    broken.fields[0].versions = "2+"
    assert any("transactional_id: versions" in p for p in diff_messages(broken, theirs))
    broken = copy.deepcopy(ours)
    broken.fields[1], broken.fields[2] = broken.fields[2], broken.fields[1]
    assert diff_messages(broken, theirs)
    broken = copy.deepcopy(ours)
    broken.flexible = "8+"
    assert diff_messages(broken, theirs)
