"""The command lines of kafka-dump-log (jopt-simple, through kafkalike.cli.joptions), the
verifiable tools (argparse4j, through kafkalike.cli.argparse4j) and the one Java exception
class every tool reports failures with."""
from __future__ import annotations

import io
import struct

import pytest

from kafkalike.cli import dump_log, joptions, producer_perf_test, verifiable_consumer, verifiable_producer
from kafkalike.cli.joptions import JavaError
from kafkalike.client.errors import KafkaError
from kafkalike.records import encode_batch


def dump(capsys, *argv):
    try:
        status = dump_log.main(list(argv))
    except SystemExit as exit_:
        status = ("exit", exit_.code)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_dump_log_without_arguments_prints_the_description_and_options_then_dies(capsys):
    status, out, err = dump(capsys)
    assert status == ("exit", 1) and out == ""
    assert err.startswith(dump_log.DESCRIPTION + "\n" + "Option")
    for name in ("files", "print-data-log", "deep-iteration", "max-message-size", "value-decoder-class",
                 "key-decoder-class", "offsets-decoder", "transaction-log-decoder", "skip-record-metadata",
                 "index-sanity-check", "verify-index-only", "help", "version"):
        assert f"--{name}" in err
    assert "--max-message-size <Integer: size>" in err and "5242880" in err


def test_dump_log_help_and_missing_files_are_usage_errors(capsys):
    assert dump(capsys, "--help")[0] == ("exit", 1)
    status, out, err = dump(capsys, "--deep-iteration")
    assert status == ("exit", 1)
    assert err.startswith('Missing required argument "[files]"\nOption')


def test_dump_log_version(capsys):
    assert dump(capsys, "--version") == (0, "2.8.0 (Commit:kafkalike)\n", "")


def test_dump_log_parse_errors_escape_as_jopt_exceptions(capsys):
    status, _, err = dump(capsys, "--fil", "x.log")      # whole names only (CommandDefaultOptions)
    assert status == 1
    assert err.startswith('Exception in thread "main" joptsimple.UnrecognizedOptionException: '
                          "fil is not a recognized option\n\tat kafka.tools.DumpLogSegments$.main")
    status, _, err = dump(capsys, "--files")
    assert status == 1 and "OptionMissingRequiredArgumentException: Option files requires an argument" in err


def test_dump_log_decoders_and_lazy_conversion(capsys, tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(encode_batch([(struct.pack(">i", 7), struct.pack(">q", -2), None, 1_700_000_000_000)]))
    status, out, _ = dump(capsys, "--files", str(path), "--key-decoder-class", "kafka.serializer.IntegerDecoder",
                          "--value-decoder-class", "kafka.serializer.LongDecoder", "--skip-record-metadata")
    assert status == 0 and out.splitlines()[-1] == "| key: 7 payload: -2"
    # A decoder option alone turns printing on, with the default StringDecoder.
    status, out, _ = dump(capsys, "--files", str(path), "--value-decoder-class")
    assert status == 0 and " payload: " in out.splitlines()[-1]
    # Unknown classes and bad numbers fail when first needed, after "Dumping <file>".
    status, out, err = dump(capsys, "--files", str(path), "--value-decoder-class", "com.example.Nope")
    assert (status, out) == (1, f"Dumping {path}\n")
    assert err.startswith('Exception in thread "main" java.lang.ClassNotFoundException: com.example.Nope\n')
    status, out, err = dump(capsys, "--files", str(path), "--max-message-size", "big")
    assert (status, out) == (1, f"Dumping {path}\n")
    assert "OptionArgumentConversionException: Cannot parse argument 'big' of option max-message-size" in err


def test_dump_log_refuses_the_cluster_metadata_decoder_it_does_not_implement(capsys, tmp_path):
    status, out, err = dump(capsys, "--files", str(tmp_path / "0.log"), "--cluster-metadata-decoder")
    assert (status, out) == (1, "")
    assert "does not implement --cluster-metadata-decoder" in err
    # Kafka 2.8 has the option (so it is in the table), unlike options it never had.
    assert "--cluster-metadata-decoder" in joptions.format_help(dump_log.OPTIONS, dump_log.DIALECT)


def test_verifiable_tools_fail_as_argparse4j_does(capsys):
    with pytest.raises(SystemExit) as exit_:
        verifiable_producer.main(["--topic", "t"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("usage: verifiable-producer ")
    assert err.endswith("verifiable-producer: error: one of the arguments --bootstrap-server --broker-list "
                        "is required\n")
    with pytest.raises(SystemExit):
        verifiable_producer.main(["--topic", "t", "--bootstrap-server", "h:1", "--acks", "2"])
    assert capsys.readouterr().err.endswith("error: argument --acks: invalid choice: '2' (choose from {0,1,-1})\n")
    with pytest.raises(SystemExit):
        verifiable_consumer.main(["--bootstrap-server", "h:1", "--topic", "t", "--group-id", "g",
                                  "--max-messages", "9999999999"])
    assert capsys.readouterr().err.endswith(
        "error: argument --max-messages: could not convert '9999999999' to Integer "
        '(For input string: "9999999999")\n')
    with pytest.raises(SystemExit):
        verifiable_consumer.main(["--bootstrap-server", "h:1", "--topic", "t"])
    assert capsys.readouterr().err.endswith("verifiable-consumer: error: argument --group-id is required\n")
    # Several missing: argparse4j names the first one only, as Kafka prints it.
    with pytest.raises(SystemExit) as exit_:
        verifiable_consumer.main(["--bootstrap-server", "h:1"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.endswith("verifiable-consumer: error: argument --topic is required\n")


def test_perf_tool_with_two_required_arguments_missing_names_the_first(capsys):
    with pytest.raises(SystemExit) as exit_:
        producer_perf_test.main(["--topic", "t", "--record-size", "10"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("usage: producer-performance ")
    assert err.endswith("producer-performance: error: argument --num-records is required\n")


def test_verifiable_tools_show_the_connection_group():
    out = io.StringIO()
    assert verifiable_producer.main([], out=out) == 0
    assert "Connection Group:\n  Group of arguments for connection to brokers\n" in out.getvalue()


def test_one_java_error_class_prints_every_way_the_tools_need():
    cause = KafkaError("broker gone")
    error = JavaError("org.apache.kafka.common.KafkaException", "Failed to construct kafka producer", cause)
    assert error.trace("a.B.main(B.scala)") == (
        "org.apache.kafka.common.KafkaException: Failed to construct kafka producer\n\tat a.B.main(B.scala)\n"
        f"Caused by: {joptions.throwable(cause)}")
    nested = JavaError("kafka.common.AdminCommandFailedException", "Admin command failed",
                       JavaError("kafka.admin.AdminOperationException", None))
    assert nested.render() == ("kafka.common.AdminCommandFailedException: Admin command failed\n"
                               "Caused by: kafka.admin.AdminOperationException")
    assert joptions.throwable(JavaError("java.lang.IllegalStateException", "")) == "java.lang.IllegalStateException: "
