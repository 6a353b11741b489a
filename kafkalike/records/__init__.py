"""Record batches (v2; legacy magic 0/1 read, written and converted for old clients), codecs, control records."""
from .batch import (
    CREATE_TIME, LOG_APPEND_TIME, TIMESTAMP_TYPE_NAMES, BatchBuilder, RecordBatch,
    decode_batches, encode_batch, iter_records,
)
from .compression import (
    CODEC_NAMES, DEFAULT_MAX_OUTPUT_SIZE, GZIP, LZ4, NONE, SNAPPY, ZSTD, codec_by_name, compress,
    decompress,
)
from .control import (
    ControlKey, ControlRecordType, EndTransactionMarker, encode_control_key,
    encode_end_txn_marker_batch, parse_control_key, parse_end_txn_marker,
)
from .header import BatchHeader, InvalidRecordError
from .legacy import LegacyBatch, LegacyRecord
from .record import Record, decode_records, encode_record

__all__ = [
    "BatchBuilder", "BatchHeader", "CODEC_NAMES", "CREATE_TIME", "ControlKey", "ControlRecordType",
    "DEFAULT_MAX_OUTPUT_SIZE", "EndTransactionMarker", "GZIP", "InvalidRecordError", "LOG_APPEND_TIME",
    "LZ4", "LegacyBatch", "LegacyRecord", "NONE", "Record", "RecordBatch", "SNAPPY",
    "TIMESTAMP_TYPE_NAMES", "ZSTD", "codec_by_name", "compress", "decode_batches", "decode_records",
    "decompress", "encode_batch", "encode_control_key", "encode_end_txn_marker_batch",
    "encode_record", "iter_records", "parse_control_key", "parse_end_txn_marker",
]
