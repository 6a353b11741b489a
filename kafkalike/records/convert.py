"""Re-encode batches with another codec, for topics whose compression.type is fixed.

Kafka stores what the producer sent unless the topic names a codec; then batches in any
other codec are decompressed and written again in the topic's. This is the one place
the broker touches records, and only for topics configured that way.
"""
from __future__ import annotations

from kafkalike.records.batch import decode_batches, encode_batch
from kafkalike.records.compression import codec_by_name
from kafkalike.records.header import CODEC_MASK, iter_batch_headers

PRODUCER = "producer"


def target_codec(compression_type: str) -> int | None:
    """The codec a topic's compression.type demands; None for "producer" (keep it)."""
    if compression_type == PRODUCER:
        return None
    return 0 if compression_type == "uncompressed" else codec_by_name(compression_type)


def needs_recompression(buf, codec: int) -> bool:
    """Cheap check on the headers alone (CRCs are checked when the log appends)."""
    return any(h.attributes & CODEC_MASK != codec and not h.is_control
               for _, h in iter_batch_headers(buf, check_crc=False))


def recompress(buf, codec: int) -> bytes:
    """Every batch in `buf` re-encoded with `codec`; raises InvalidRecordError on bad input."""
    out = []
    for batch in decode_batches(buf, allow_partial_tail=False):
        if batch.compression == codec or batch.is_control:
            out.append(batch.to_bytes())
            continue
        out.append(encode_batch(batch.records(), compression=codec, timestamp_type=batch.timestamp_type,
                                producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
                                base_timestamp=batch.base_timestamp))
    return b"".join(out)
