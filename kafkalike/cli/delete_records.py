"""kafka-delete-records: move partitions' log start offsets forward, as Kafka 2.8's DeleteRecordsCommand.

The offset JSON file is {"partitions": [{"topic": "t", "partition": 0, "offset": 5}],
"version": 1} (offset -1: the high watermark). The tool prints `Executing records delete
operation`, `Records delete operation completed:` and per partition `partition: t-0\\t
low_watermark: 5`, or `partition: t-0\\terror: <exception>: <message>` for one that
failed (the tool still exits 0, as Kafka's does). A malformed file, an unsupported
version or duplicate partitions fail before anything is deleted, with Kafka's exceptions.
Each partition is asked of its leader on its own, so one failure does not hide the rest.
"""
from __future__ import annotations

import json
import sys
from typing import Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import JavaError, Option, throwable
from kafkalike.cli.log_dirs import admin_config
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.admin import AdminClient, KafkaAdminError

ADMIN_OPERATION = "kafka.admin.AdminOperationException"
ADMIN_COMMAND_FAILED = "kafka.common.AdminCommandFailedException"
HELP_MESSAGE = "This tool helps to delete records of the given partitions down to the specified offset."
OPTIONS = command_default.with_defaults(
    Option("bootstrap-server", "REQUIRED: The server to connect to.", "server(s) to use for bootstrapping"),
    Option("offset-json-file", "REQUIRED: The JSON file with offset per partition. The format to use is: "
           "{\"partitions\": [{\"topic\": \"foo\", \"partition\": 1, \"offset\": 1}], \"version\":1 }",
           "Offset json file path"),
    Option("command-config", "A property file containing configs to be passed to Admin Client.",
           "command config property file path"),
)


def _field(obj: dict, name: str, kind: str):
    """JsonValue's to[T]: a missing field or a value of the wrong type fails as Kafka's Json does."""
    if name not in obj:
        raise JavaError("java.util.NoSuchElementException", f"Key not found: {name}")
    value = obj[name]
    ok = isinstance(value, str) if kind == "String" else isinstance(value, int) and not isinstance(value, bool)
    if not ok:
        raise JavaError("kafka.utils.json.JsonMappingException",
                        f"Expected `{kind}` value, received {json.dumps(value)}")
    return value


def parse_offset_json(text: str) -> list[tuple[tuple[str, int], int]]:
    """parseOffsetJsonStringWithoutDedup: ((topic, partition), offset) in file order."""
    try:
        data = json.loads(text)
    except ValueError:
        raise JavaError(ADMIN_OPERATION, "The input string is not a valid JSON") from None
    if not isinstance(data, dict):
        raise JavaError("kafka.utils.json.JsonMappingException", f"Expected JSON object, received {text.strip()}")
    version = _field(data, "version", "Int") if "version" in data else 1
    if version != 1:
        raise JavaError(ADMIN_OPERATION, f"Not supported version field value {version}")
    if "partitions" not in data:
        raise JavaError(ADMIN_OPERATION, "Missing partitions field")
    if not isinstance(data["partitions"], list):
        raise JavaError("kafka.utils.json.JsonMappingException",
                        f"Expected JSON array, received {json.dumps(data['partitions'])}")
    out = []
    for entry in data["partitions"]:
        if not isinstance(entry, dict):
            raise JavaError("kafka.utils.json.JsonMappingException", f"Expected JSON object, received {entry}")
        out.append(((_field(entry, "topic", "String"), _field(entry, "partition", "Int")),
                    _field(entry, "offset", "Long")))
    return out


def delete(admin: AdminClient, offsets: list[tuple[tuple[str, int], int]], out: TextIO) -> None:
    seen: set[tuple[str, int]] = set()
    duplicates: list[str] = []
    for tp, _ in offsets:
        if tp in seen and f"{tp[0]}-{tp[1]}" not in duplicates:
            duplicates.append(f"{tp[0]}-{tp[1]}")
        seen.add(tp)
    if duplicates:
        raise JavaError(ADMIN_COMMAND_FAILED,
                        f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    out.write("Executing records delete operation\n")
    results: list[tuple[tuple[str, int], str]] = []
    for tp, offset in offsets:
        try:
            low = admin.delete_records({tp: offset})[tp]
            results.append((tp, f"low_watermark: {low}"))
        except KafkaAdminError as error:
            results.append((tp, f"error: {throwable(error)}"))
    out.write("Records delete operation completed:\n")
    for (topic, partition), text in results:
        out.write(f"partition: {topic}-{partition}\t{text}\n")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE, ("bootstrap-server", "offset-json-file"))
        path = opts.value("offset-json-file") or ""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            raise JavaError("java.nio.file.NoSuchFileException", path) from None
        offsets = parse_offset_json(text)
        admin = AdminClient(admin_config(opts, "adminclient-1"))
        try:
            delete(admin, offsets, out)
        finally:
            admin.close()
        return 0
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
