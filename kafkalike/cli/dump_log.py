"""kafka-dump-log: print segment files the way Kafka 2.8's DumpLogSegments does.

Line formats are Kafka 2.8.0's, byte for byte, including its quirks: in 2.8 each
record line repeats the batch fields (KAFKA-6181, reverted in 3.0), v2 records
print `isValid: true crc: null`, and codec names are Java enum names (NONE, GZIP).
Where Kafka would die with a stack trace (a corrupt size field, an index pointing
nowhere) this tool reports the problem on stderr and carries on.

The command line is DumpLogSegmentsOptions' (jopt-simple, through kafkalike.cli.joptions):
Kafka 2.8's options and help, the usage message and option table on stderr with exit 1
when no argument, --help or no --files is given, --version, and jopt's exceptions for a
bad command line as the JVM prints them.

--offsets-decoder and --transaction-log-decoder print each record's key and value the way
Kafka's OffsetsMessageParser and TransactionLogMessageParser do (kafkalike.cli.dump_log_decoders);
like any decoder option they turn on --print-data-log, and they take precedence over the
decoder classes, which are then never loaded. A record those decoders cannot read would end
Kafka's tool with the exception; this one prints the record's line without its key and
payload, reports the exception on stderr, carries on, and exits 1.
--cluster-metadata-decoder (KRaft's metadata records, which a ZooKeeper-mode cluster never
writes) is accepted as Kafka 2.8 accepts it and refused with a message.
"""
from __future__ import annotations

import mmap
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Callable

from crc32c import crc32c

from kafkalike.cli import joptions
from kafkalike.cli.dump_log_decoders import PARSERS, MessageParser
from kafkalike.cli.joptions import (KAFKA_COMMIT_ID, KAFKA_VERSION, Dialect, JavaError, Option, ParsedArgs,
                                    VersionRequested, options_table)

from kafkalike.records import compression as codecs
from kafkalike.records.batch import MIN_ENTRY_SIZE, RecordBatch, TIMESTAMP_TYPE_NAMES
from kafkalike.records.control import ControlRecordType, parse_control_key, parse_end_txn_marker
from kafkalike.records.header import InvalidRecordError, LOG_OVERHEAD, MAGIC, read_header
from kafkalike.records.legacy import LegacyBatch

RECORD_INDENT = "|"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
_INDEX_ENTRY = struct.Struct(">ii")       # relative offset, position
_TIME_INDEX_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
_TXN_ENTRY = struct.Struct(">hqqqq")      # version, producerId, first, last, lastStable
_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_SIZE = struct.Struct(">i")


def _java_bool(flag) -> str:
    return "true" if flag else "false"


def _codec_label(codec: int) -> str:
    name = codecs.CODEC_NAMES.get(codec)
    return name.upper() if name else f"UNKNOWN({codec})"


def _text(data: bytes) -> str:
    """Kafka's StringDecoder: UTF-8, malformed input replaced."""
    return data.decode("utf-8", "replace")


def _base_offset(path: str) -> int:
    return int(os.path.basename(path).split(".")[0])


@dataclass
class Findings:
    """What DumpLogSegments collects while dumping and prints to stderr at the end."""
    index_mismatches: dict = field(default_factory=dict)
    non_consecutive: dict = field(default_factory=dict)
    timestamp_mismatches: dict = field(default_factory=dict)
    out_of_order: dict = field(default_factory=dict)
    offsets_not_found: dict = field(default_factory=dict)
    failed: bool = False

    def report(self, err) -> None:
        # Kafka prepends to these lists, so they print newest first.
        for name, pairs in self.index_mismatches.items():
            print(f"Mismatches in :{name}", file=err)
            for index_offset, log_offset in reversed(pairs):
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)
        for name, pairs in self.timestamp_mismatches.items():
            print(f"Found timestamp mismatch in :{name}", file=err)
            for index_ts, log_ts in pairs:
                print(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}", file=err)
        for name, pairs in self.out_of_order.items():
            print(f"Found out of order timestamp in :{name}", file=err)
            for index_ts, prev_ts in pairs:
                print(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}", file=err)
        for pairs in self.offsets_not_found.values():
            print("The following indexed offsets are not found in the log.", file=err)
            for indexed, found in pairs:
                print(f"Indexed offset: {indexed}, found log offset: {found}", file=err)
        for name, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {name}", file=err)
            for first, second in reversed(pairs):
                print(f"  {first} is followed by {second}", file=err)


class _Corrupt(Exception):
    """A log entry Kafka's FileLogInputStream would throw on."""


def _map(path: str):
    """Read-only view of a file's bytes (mmap, or bytes for an empty file)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _unmap(buf) -> None:
    if isinstance(buf, mmap.mmap):
        try:
            buf.close()
        except BufferError:
            pass  # a view is still alive; the mapping goes when it does


def iter_file_batches(buf, start: int = 0, end: int | None = None):
    """Yield (position, batch) like Kafka's FileLogInputStream.

    Stops quietly at a torn tail (fewer bytes than the entry declares), raises
    _Corrupt for a size below the minimum overhead, an unknown magic, or a v2
    header that cannot be read.
    """
    end = len(buf) if end is None else min(end, len(buf))
    pos = start
    while end - pos >= LOG_OVERHEAD + 5:
        (size,) = _SIZE.unpack_from(buf, pos + 8)
        if size < MIN_ENTRY_SIZE:
            raise _Corrupt(f"Found record size {size} smaller than minimum record overhead "
                           f"({MIN_ENTRY_SIZE}) at position {pos}.")
        if pos > end - LOG_OVERHEAD - size:
            return
        magic = buf[pos + MAGIC]
        try:
            if magic == 2:
                batch = RecordBatch(buf, pos, read_header(buf, pos))
            elif magic in (0, 1):
                batch = LegacyBatch(buf, pos)
            else:
                raise _Corrupt(f"Invalid magic found in record: {magic} at position {pos}")
        except InvalidRecordError as exc:
            raise _Corrupt(f"{exc}") from None
        yield pos, batch
        pos += LOG_OVERHEAD + size


@dataclass
class Options:
    files: list
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    skip_record_metadata: bool = False
    key_decoder: Callable[[bytes], str] = _text
    value_decoder: Callable[[bytes], str] = _text
    message_parser: MessageParser | None = None  # an internal topic's decoder, instead of the two above
    internal_decoder: str | None = None          # the option that chose it
    args: ParsedArgs | None = None   # the command line, for the values Kafka converts on first use


def _convert_on_use(opts: Options, suffix: str) -> None:
    """Kafka's lazy vals: --max-message-size and the decoder classes are converted when the
    first file that needs them is dumped, so a bad one fails after the files before it."""
    if opts.args is None or suffix not in (".log", ".index", ".timeindex"):
        return
    opts.max_message_size = opts.args.number("max-message-size")
    if suffix == ".log" and opts.message_parser is None:
        opts.key_decoder = _decoder(opts.args, "key-decoder-class")
        opts.value_decoder = _decoder(opts.args, "value-decoder-class")


def _batch_line(batch, position: int) -> str:
    if batch.magic >= 2:
        head = (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
                f"count: {batch.count} baseSequence: {batch.base_sequence} "
                f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
                f"producerEpoch: {batch.producer_epoch} "
                f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
                f"isTransactional: {_java_bool(batch.is_transactional)} "
                f"isControl: {_java_bool(batch.is_control)}")
    else:
        head = f"offset: {batch.last_offset}"
    return (f"{head} position: {position} {TIMESTAMP_TYPE_NAMES[batch.timestamp_type]}: "
            f"{batch.max_timestamp} size: {batch.size} magic: {batch.magic} "
            f"compresscodec: {_codec_label(batch.compression)} crc: {batch.crc} "
            f"isvalid: {_java_bool(batch.is_valid())}")


def _control_text(record) -> str:
    control_type = parse_control_key(record.key).type
    if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        marker = parse_end_txn_marker(record)
        return f" endTxnMarker: {marker.control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"
    return f" controlType: {control_type.name}({parse_control_key(record.key).type_id})"


def _record_line(batch, record, position: int, opts: Options) -> tuple[str, JavaError | None]:
    """The record's line, and what the message parser threw instead of its key and payload."""
    out = []
    prefix = f"{RECORD_INDENT} "
    if not opts.skip_record_metadata:
        legacy = batch.magic < 2
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        out.append(
            f"{prefix}offset: {record.offset} "
            f"isValid: {_java_bool(record.valid) if legacy else 'true'} "
            f"crc: {record.crc if legacy else 'null'} keySize: {key_size} valueSize: {value_size} "
            f"{TIMESTAMP_TYPE_NAMES[batch.timestamp_type]}: {record.timestamp} "
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} batchSize: {batch.size} "
            f"magic: {batch.magic} compressType: {_codec_label(batch.compression)} "
            f"position: {position}")
        prefix = " "
        if legacy:
            out.append(f" crc: {record.crc} isvalid: {_java_bool(record.valid)}")
        else:
            base_seq = batch.base_sequence
            sequence = -1 if base_seq < 0 else (base_seq + record.offset - batch.base_offset) & 0x7FFFFFFF
            keys = ",".join(k for k, _ in record.headers)
            out.append(f" sequence: {sequence} headerKeys: [{keys}]")
        if batch.is_control:
            out.append(_control_text(record))
    if opts.print_data_log and not batch.is_control:
        if opts.message_parser is not None:
            try:
                key, payload = opts.message_parser(record.key, record.value)
            except JavaError as error:
                return "".join(out), error
        else:
            key = None if record.key is None else opts.key_decoder(record.key)
            payload = None if record.value is None else opts.value_decoder(record.value)
        if key is not None:
            out.append(f"{prefix}key: {key}")
        if payload is not None:
            out.append(f" payload: {payload}")
    return "".join(out), None


def dump_log(path: str, opts: Options, findings: Findings, out, err) -> None:
    print(f"Starting offset: {_base_offset(path)}", file=out)
    buf = _map(path)
    deep = opts.deep_iteration or opts.print_data_log
    valid_bytes = 0
    last_offset = -1
    name = os.path.abspath(path)
    try:
        for position, batch in iter_file_batches(buf):
            print(_batch_line(batch, position), file=out)
            if deep:
                try:
                    for record in batch.records():
                        if last_offset != -1 and record.offset != last_offset + 1:
                            findings.non_consecutive.setdefault(name, []).append(
                                (last_offset, record.offset))
                        last_offset = record.offset
                        line, error = _record_line(batch, record, position, opts)
                        print(line, file=out)
                        if error is not None:
                            findings.failed = True
                            print(f"Could not decode the record at offset {record.offset} of {name}: "
                                  f"{error.render()}", file=err)
                except InvalidRecordError as exc:
                    findings.failed = True
                    print(f"Could not read the records of the batch at position {position}: {exc}",
                          file=err)
            valid_bytes += batch.size
    except _Corrupt as exc:
        findings.failed = True
        print(f"Corrupt log entry in {name}: {exc}", file=err)
    trailing = len(buf) - valid_bytes
    _unmap(buf)
    if trailing > 0:
        print(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}", file=out)


def _sibling(path: str, suffix: str) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, os.path.basename(path).split(".")[0] + suffix)


def _read_entries(path: str, entry: struct.Struct) -> tuple[list, int]:
    with open(path, "rb") as f:
        data = f.read()
    count = len(data) // entry.size
    return [entry.unpack_from(data, i * entry.size) for i in range(count)], len(data)


def _first_batch(buf, position: int, limit: int):
    """The first whole batch at `position` within `limit` bytes, or None."""
    try:
        for _, batch in iter_file_batches(buf, position, position + limit):
            return batch
    except _Corrupt:
        return None
    return None


def dump_offset_index(path: str, opts: Options, findings: Findings, out, err) -> None:
    base = _base_offset(path)
    entries, length = _read_entries(path, _INDEX_ENTRY)
    if opts.index_sanity_check:
        abspath = os.path.abspath(path)
        if entries and base + entries[-1][0] < base:
            raise InvalidRecordError(
                f"Corrupt index found, index file ({abspath}) has non-zero size but the last "
                f"offset is {base + entries[-1][0]} which is less than the base offset {base}.")
        if length % _INDEX_ENTRY.size:
            raise InvalidRecordError(
                f"Index file {abspath} is corrupt, found {length} bytes which is neither "
                f"positive nor a multiple of {_INDEX_ENTRY.size}.")
        print(f"{path} passed sanity check.", file=out)
        return
    log = _map(_sibling(path, ".log"))
    try:
        for i, (relative, position) in enumerate(entries):
            offset = base + relative
            # A preallocated index is zero-filled past its last entry.
            if offset == base and i > 0:
                return
            batch = _first_batch(log, position, opts.max_message_size) if position >= 0 else None
            found = batch.last_offset if batch is not None else -1
            if found != offset:
                findings.index_mismatches.setdefault(os.path.abspath(path), []).append((offset, found))
            if not opts.verify_index_only:
                print(f"offset: {offset} position: {position}", file=out)
    finally:
        _unmap(log)


def _lookup_position(index_entries: list, base: int, target: int) -> int:
    """Position of the greatest indexed offset <= target (OffsetIndex.lookup)."""
    position = 0
    for i, (relative, pos) in enumerate(index_entries):
        if i > 0 and relative == 0:
            break
        if base + relative > target:
            break
        position = pos
    return position


def dump_time_index(path: str, opts: Options, findings: Findings, out, err) -> None:
    base = _base_offset(path)
    entries, length = _read_entries(path, _TIME_INDEX_ENTRY)
    abspath = os.path.abspath(path)
    if opts.index_sanity_check:
        if entries and entries[-1][0] < entries[0][0]:
            raise InvalidRecordError(
                f"Corrupt time index found, time index file ({abspath}) has non-zero size but "
                f"the last timestamp is {entries[-1][0]} which is less than the first timestamp "
                f"{entries[0][0]}")
        if entries and base + entries[-1][1] < base:
            raise InvalidRecordError(
                f"Corrupt time index found, time index file ({abspath}) has non-zero size but "
                f"the last offset is {base + entries[-1][1]} which is less than the first offset {base}")
        if length % _TIME_INDEX_ENTRY.size:
            raise InvalidRecordError(
                f"Time index file {abspath} is corrupt, found {length} bytes which is neither "
                f"positive nor a multiple of {_TIME_INDEX_ENTRY.size}.")
        print(f"{path} passed sanity check.", file=out)
        return
    log = _map(_sibling(path, ".log"))
    index_path = _sibling(path, ".index")
    index_entries = _read_entries(index_path, _INDEX_ENTRY)[0] if os.path.exists(index_path) else []
    try:
        _check_time_index(path, base, entries, index_entries, log, opts, findings, out)
    finally:
        _unmap(log)


def _check_time_index(path, base, entries, index_entries, log, opts, findings, out) -> None:
    abspath = os.path.abspath(path)
    prev_timestamp = -1
    for i, (timestamp, relative) in enumerate(entries):
        offset = base + relative
        if offset == base and i > 0:
            return
        position = _lookup_position(index_entries, base, offset)
        batch = None
        try:
            for _, candidate in iter_file_batches(log, position):
                if candidate.last_offset >= offset:
                    batch = candidate
                    break
        except _Corrupt:
            pass
        if batch is None:
            findings.offsets_not_found.setdefault(abspath, []).append((offset, -1))
        elif batch.last_offset != offset:
            findings.offsets_not_found.setdefault(abspath, []).append((offset, batch.last_offset))
        else:
            max_timestamp = max((r.timestamp for r in batch.records()), default=-1)
            if max_timestamp != timestamp:
                findings.timestamp_mismatches.setdefault(abspath, []).append((timestamp, max_timestamp))
            if prev_timestamp >= timestamp:
                findings.out_of_order.setdefault(abspath, []).append((timestamp, prev_timestamp))
        if not opts.verify_index_only:
            print(f"timestamp: {timestamp} offset: {offset}", file=out)
        prev_timestamp = timestamp


def dump_txn_index(path: str, opts: Options, findings: Findings, out, err) -> None:
    entries, _ = _read_entries(path, _TXN_ENTRY)
    for version, producer_id, first, last, last_stable in entries:
        if version > 0:
            raise InvalidRecordError(f"Unexpected aborted transaction version {version} in "
                                     f"transaction index {os.path.abspath(path)}, current version is 0")
        print(f"version: {version} producerId: {producer_id} firstOffset: {first} "
              f"lastOffset: {last} lastStableOffset: {last_stable}", file=out)


def dump_producer_snapshot(path: str, opts: Options, findings: Findings, out, err) -> None:
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _SNAPSHOT_HEADER.size:
        print("Snapshot failed schema validation: the file is truncated", file=err)
        return
    version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
    if version != 1:
        print(f"Snapshot contained an unknown file version {version}", file=err)
        return
    computed = crc32c(data[6:])
    if crc != computed:
        print(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
              f"Computed crc: {computed}", file=err)
        return
    if count < 0 or len(data) != _SNAPSHOT_HEADER.size + count * _SNAPSHOT_ENTRY.size:
        print("Snapshot failed schema validation: entry count does not match the file size", file=err)
        return
    for i in range(count):
        (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) = _SNAPSHOT_ENTRY.unpack_from(data, _SNAPSHOT_HEADER.size + i * _SNAPSHOT_ENTRY.size)
        line = (f"producerId: {producer_id} producerEpoch: {epoch} "
                f"coordinatorEpoch: {coordinator_epoch} "
                f"currentTxnFirstOffset: {f'Some({txn_first})' if txn_first >= 0 else 'None'} ")
        if last_offset >= 0:
            first_seq = last_seq - offset_delta
            if last_seq < offset_delta:
                first_seq = 0x7FFFFFFF - (offset_delta - last_seq) + 1
            line += (f"firstSequence: {first_seq} lastSequence: {last_seq} lastOffset: {last_offset} "
                     f"offsetDelta: {offset_delta} timestamp: {timestamp}")
        print(line, file=out)


_DUMPERS = {
    ".log": dump_log,
    ".index": dump_offset_index,
    ".timeindex": dump_time_index,
    ".txnindex": dump_txn_index,
    ".snapshot": dump_producer_snapshot,
}


# -- the command line: DumpLogSegmentsOptions ------------------------------------------------------

DESCRIPTION = ("This tool helps to parse a log file and dump its contents to the console, useful for debugging a "
               "seemingly corrupt log segment.")
STRING_DECODER = "kafka.serializer.StringDecoder"
_DECODER_HELP = ("This class should implement kafka.serializer.Decoder trait. Custom jar should be available in "
                 "kafka/libs directory.")
OPTIONS = options_table(
    Option("print-data-log", "if set, printing the messages content when dumping data logs. Automatically set if "
           "any decoder option is specified."),
    Option("verify-index-only", "if set, just verify the index log without printing its content."),
    Option("index-sanity-check", "if set, just checks the index sanity without printing its content. This is the "
           "same check that is executed on broker startup to determine if an index needs rebuilding or not."),
    Option("files", "REQUIRED: The comma separated list of data and index log files to be dumped.",
           "file1, file2, ..."),
    Option("max-message-size", "Size of largest message.", "size", "Integer", default=str(DEFAULT_MAX_MESSAGE_SIZE)),
    Option("deep-iteration", "if set, uses deep instead of shallow iteration. Automatically set if print-data-log "
           "is enabled."),
    Option("value-decoder-class", "if set, used to deserialize the messages. " + _DECODER_HELP, "",
           default=STRING_DECODER, optional_arg=True),
    Option("key-decoder-class", "if set, used to deserialize the keys. " + _DECODER_HELP, "",
           default=STRING_DECODER, optional_arg=True),
    Option("offsets-decoder", "if set, log data will be parsed as offset data from the __consumer_offsets topic."),
    Option("transaction-log-decoder", "if set, log data will be parsed as transaction metadata from the "
           "__transaction_state topic."),
    Option("cluster-metadata-decoder", "if set, log data will be parsed as cluster metadata records."),
    Option("skip-record-metadata", "whether to skip printing metadata for each record."),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)
# DumpLogSegmentsOptions calls parser.parse directly (jopt's exceptions escape main), values
# are converted when used, and CommandDefaultOptions' parser takes whole option names only.
DIALECT = Dialect(error=JavaError, convert_at_parse=False, flag_values=False, single_value=True,
                  optional_arg_yields_to="option", abbreviations=False)
# Kafka's decoders of internal topics' records, in the order DumpLogSegmentsOptions.messageParser
# picks one when several are given; the last is accepted as Kafka accepts it, then refused.
_INTERNAL_DECODERS = ("offsets-decoder", "transaction-log-decoder", "cluster-metadata-decoder")
_NOT_IMPLEMENTED = "cluster-metadata-decoder"
MAIN = "kafka.tools.DumpLogSegments$.main(DumpLogSegments.scala)"


def _fixed_width(size: int, fmt: str) -> Callable[[bytes], str]:
    def decode(data: bytes) -> str:
        if len(data) < size:  # ByteBuffer.getInt/getLong on too few bytes
            raise JavaError("java.nio.BufferUnderflowException")
        return str(struct.unpack_from(fmt, data)[0])
    return decode


def _array_identity(data: bytes) -> str:
    """What Scala's string interpolation shows for a byte array: its class and identity hash."""
    return f"[B@{id(data) & 0x7FFFFFFF:x}"


# kafka.serializer's decoders, by the class name --key-decoder-class / --value-decoder-class take.
DECODERS: dict[str, Callable[[bytes], str]] = {
    STRING_DECODER: _text,
    "kafka.serializer.IntegerDecoder": _fixed_width(4, ">i"),
    "kafka.serializer.LongDecoder": _fixed_width(8, ">q"),
    "kafka.serializer.DefaultDecoder": _array_identity,
}


class _Usage(Exception):
    """CommandLineUtils.printUsageAndDie: the message, then the option table, on stderr; exit 1."""


def _decoder(args: ParsedArgs, option: str) -> Callable[[bytes], str]:
    """CoreUtils.createObject of the named decoder class (only when a data log is dumped)."""
    name = args.value(option) or STRING_DECODER
    if name not in DECODERS:
        raise JavaError("java.lang.ClassNotFoundException", name)
    return DECODERS[name]


def parse_args(argv) -> Options:
    """DumpLogSegmentsOptions, CommandLineUtils.printHelpAndExitIfNeeded and checkArgs, in Kafka's order."""
    args = joptions.parse_args(OPTIONS, argv, DIALECT)
    if not argv or args.has("help"):
        raise _Usage(DESCRIPTION)
    if args.has("version"):
        raise VersionRequested()
    if not args.has("files"):
        raise _Usage(f'Missing required argument "{OPTIONS["files"]}"')
    print_data_log = args.has("print-data-log") or any(
        args.has(o) for o in ("value-decoder-class", "key-decoder-class") + _INTERNAL_DECODERS)
    chosen = next((o for o in _INTERNAL_DECODERS if args.has(o)), None)
    return Options(files=(args.value("files") or "").split(","), print_data_log=print_data_log,
                   message_parser=PARSERS.get(chosen), internal_decoder=chosen,
                   deep_iteration=args.has("deep-iteration") or print_data_log,
                   verify_index_only=args.has("verify-index-only"),
                   index_sanity_check=args.has("index-sanity-check"),
                   skip_record_metadata=args.has("skip-record-metadata"), args=args)


def main(argv=None) -> int:
    """Entry point; returns 0, or 1 if some file could not be read or was corrupt.

    A usage error ends the tool as Kafka's printUsageAndDie does: SystemExit(1).
    """
    out, err = sys.stdout, sys.stderr
    try:
        opts = parse_args(sys.argv[1:] if argv is None else argv)
    except _Usage as usage:
        err.write(f"{usage}\n{joptions.format_help(OPTIONS, DIALECT)}")
        err.flush()
        raise SystemExit(1) from None
    except VersionRequested:
        out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
        return 0
    except JavaError as error:  # jopt's exception escapes main: the JVM prints it, exit 1
        err.write(f'Exception in thread "main" {error.trace(MAIN)}\n')
        return 1
    if opts.internal_decoder == _NOT_IMPLEMENTED:
        err.write(f"kafkalike's kafka-dump-log does not implement --{_NOT_IMPLEMENTED} (Kafka 2.8's decoder of "
                  "KRaft cluster metadata records, which a ZooKeeper-mode cluster does not write); use "
                  "--print-data-log to see the raw keys and values\n")
        return 1
    for stream in (out, err):
        # Payloads are printed as text; a terminal that cannot show a character
        # must not end the dump.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):
                pass
    try:
        return _dump_all(opts, out, err)
    except JavaError as error:  # thrown while dumping (a bad --max-message-size, an unknown decoder)
        out.flush()
        err.write(f'Exception in thread "main" {error.trace(MAIN)}\n')
        return 1
    except BrokenPipeError:
        # Output piped into `head` and closed: stop quietly rather than with a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _dump_all(opts: Options, out, err) -> int:
    findings = Findings()
    for path in opts.files:
        print(f"Dumping {path}", file=out)
        name = os.path.basename(path)
        suffix = name[name.rfind("."):] if "." in name else ""
        dumper = _DUMPERS.get(suffix)
        if dumper is None:
            print(f"Ignoring unknown file {path}", file=err)
            continue
        _convert_on_use(opts, suffix)
        try:
            dumper(path, opts, findings, out, err)
        except ValueError as exc:  # InvalidRecordError, or a file name that is not an offset
            findings.failed = True
            print(f"Error dumping {path}: {exc}", file=err)
        except BrokenPipeError:
            raise
        except OSError as exc:
            findings.failed = True
            print(f"Error dumping {path}: {exc.strerror or exc}: {exc.filename or path}", file=err)
    findings.report(err)
    return 1 if findings.failed else 0


if __name__ == "__main__":
    sys.exit(main())
