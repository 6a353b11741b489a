"""kafka-log-dirs and kafka-delete-records without a broker: usage errors and the offset JSON file."""
from __future__ import annotations

import io

import pytest

from kafkalike.cli import delete_records, log_dirs
from kafkalike.cli.joptions import JavaError


def run(main, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_log_dirs_requires_bootstrap_server_first():
    code, out, err = run(log_dirs.main, "--describe")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == 'Missing required argument "[bootstrap-server]"'
    assert "--broker-list <String: Broker list>" in err


def test_log_dirs_refuses_abbreviations_as_the_jvm_prints_it():
    code, _, err = run(log_dirs.main, "--bootstrap", "x:1", "--describe")
    assert code == 1
    assert err == 'Exception in thread "main" joptsimple.UnrecognizedOptionException: bootstrap is not a ' \
                  'recognized option\n'


def test_version():
    code, out, _ = run(log_dirs.main, "--version")
    assert code == 0 and out.startswith("2.8")


def test_delete_records_requires_the_offset_file():
    code, _, err = run(delete_records.main, "--bootstrap-server", "x:1")
    assert code == 1
    assert err.startswith('Missing required argument "[offset-json-file]"\n')


@pytest.mark.parametrize("text,message", [
    ("{not json", "kafka.admin.AdminOperationException: The input string is not a valid JSON"),
    ('{"version": 2, "partitions": []}', "kafka.admin.AdminOperationException: Not supported version field value 2"),
    ('{"version": 1}', "kafka.admin.AdminOperationException: Missing partitions field"),
])
def test_offset_json_errors(text, message):
    with pytest.raises(JavaError) as caught:
        delete_records.parse_offset_json(text)
    assert caught.value.render() == message


def test_offset_json_in_file_order_and_version_defaults_to_1():
    assert delete_records.parse_offset_json('{"partitions": [{"topic": "t", "partition": 1, "offset": 5}, '
                                            '{"topic": "t", "partition": 0, "offset": -1}]}') == \
        [(("t", 1), 5), (("t", 0), -1)]


def test_duplicates_fail_before_anything_is_deleted(tmp_path):
    path = tmp_path / "o.json"
    path.write_text('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, '
                    '{"topic": "t", "partition": 0, "offset": 2}], "version": 1}')
    code, out, err = run(delete_records.main, "--bootstrap-server", "127.0.0.1:1", "--offset-json-file", str(path))
    assert (code, out) == (1, "")
    assert err == 'Exception in thread "main" kafka.common.AdminCommandFailedException: Offset json file ' \
                  'contains duplicate topic partitions: t-0\n'


def test_api_version_lines_as_node_api_versions_prints_them():
    from kafkalike.cli.broker_api_versions import format_versions
    client = {0: ("Produce", 0, 9), 1: ("Fetch", 0, 12), 2: ("ListOffsets", 0, 6), 3: ("Metadata", 4, 11)}
    assert format_versions({0: (0, 8), 1: (13, 14), 3: (0, 2), 99: (0, 1)}, client) == (
        "(\n\tProduce(0): 0 to 8 [usable: 8],\n\tFetch(1): 13 to 14 [unusable: node too new],\n"
        "\tListOffsets(2): UNSUPPORTED,\n\tMetadata(3): 0 to 2 [unusable: node too old],\n\tUNKNOWN(99): 0 to 1\n)")
