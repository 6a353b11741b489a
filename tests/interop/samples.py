"""Test data for the interop tier, and what a user would look at on the broker's disk.

Records are deterministic (seeded) and binary: keys and values draw from all 256 byte
values (values repeat a random run, so codecs have something to compress), so any client or broker step that treats them as text (a newline split, a
NUL terminator, a UTF-8 decode) shows up as a byte mismatch.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from kafka.record.memory_records import MemoryRecords

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# Kafka's codec ids, as stored in the low three bits of a batch's attributes.
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass
class Sample:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    timestamp: int | None = None


def binary_samples(count: int, seed: int, *, max_value: int = 300, with_headers: bool = True,
                   base_timestamp: int | None = None, tag: bytes = b"") -> list[Sample]:
    """`count` records with unique binary keys: `tag` and the index lead, so keys never
    repeat within a call, nor across calls with different tags."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        key = tag + i.to_bytes(4, "big") + rng.randbytes(rng.randint(0, 12))
        # A random run repeated: still every byte value, but compressible, since
        # librdkafka sends a batch uncompressed when the codec would make it bigger.
        run = rng.randbytes(rng.randint(1, 32))
        value = (run * (max_value // len(run) + 1))[: rng.randint(1, max_value)]
        headers = []
        if with_headers:
            headers = [("index", str(i).encode()), ("raw", rng.randbytes(rng.randint(0, 8)))][: i % 3]
        ts = None if base_timestamp is None else base_timestamp + i
        out.append(Sample(key, value, headers, ts))
    return out


def batches_on_disk(log_dir: Path, topic: str) -> list:
    """Every batch in every segment of the topic's partitions, read by kafka-python.

    kafka-python's record reader is the judge here: it checks CRCs and reports each
    batch's codec, which is how a user (kafka-dump-log) would see what the broker kept.
    """
    batches = []
    for part_dir in sorted(log_dir.glob(f"{topic}-*")):
        if part_dir.name.rsplit("-", 1)[0] != topic:
            continue
        for segment in sorted(part_dir.glob("*.log")):
            records = MemoryRecords(segment.read_bytes())
            while records.has_next():
                batch = records.next_batch()
                assert batch.validate_crc(), f"bad CRC in {segment}"
                batches.append(batch)
    return batches


def stored_codecs(log_dir: Path, topic: str) -> set[int]:
    return {b.compression_type for b in batches_on_disk(log_dir, topic)}


def stored_as_librdkafka_sends(log_dir: Path, topic: str, codec: str) -> bool:
    """librdkafka sends a batch uncompressed when compressing would not make it smaller (a
    batch of one or two random binary records, as linger timing may cut them), and the
    broker stores what it was sent; every other batch is stored in the producer's codec."""
    stored = stored_codecs(log_dir, topic)
    return CODEC_IDS[codec] in stored and stored <= {0, CODEC_IDS[codec]}
