"""Which old segments a log may delete: Kafka 2.8's three retention rules.

Segments go oldest first and only as a prefix: the walk stops at the first segment a
rule keeps. A segment is deletable only when all of it lies below the high watermark
(so consumers have had the chance to read it), and the last segment only when it is
not empty. When every segment goes, the log rolls a fresh empty one first (Log does
that), so an idle topic past retention.ms ends up empty with its offsets intact.
"""
from __future__ import annotations

from typing import Callable, Sequence

from kafkalike.storage.config import LogConfig
from kafkalike.storage.segment import LogSegment

# (segment, next segment or None) -> delete it?
Predicate = Callable[[LogSegment, "LogSegment | None"], bool]

REASON_RETENTION_MS = "retention time"
REASON_RETENTION_SIZE = "retention size"
REASON_LOG_START_OFFSET = "log start offset"


def deletable_segments(segments: Sequence[LogSegment], predicate: Predicate, *,
                       high_watermark: int, log_end_offset: int) -> list[LogSegment]:
    """The leading run of segments the predicate accepts, bounded by the high watermark."""
    out: list[LogSegment] = []
    for i, segment in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else log_end_offset
        last_and_empty = nxt is None and segment.size == 0
        if high_watermark >= upper and not last_and_empty and predicate(segment, nxt):
            out.append(segment)
        else:
            break
    return out


def retention_ms_breached(config: LogConfig, now_ms: int) -> Predicate | None:
    """Older than retention.ms by its largest timestamp (or mtime); None when retention.ms < 0."""
    if config.retention_ms < 0:
        return None
    return lambda segment, _next: now_ms - segment.largest_timestamp > config.retention_ms


def retention_size_breached(config: LogConfig, total_size: int) -> Predicate | None:
    """Oldest segments while what remains would still be >= retention.bytes."""
    if config.retention_bytes < 0 or total_size < config.retention_bytes:
        return None
    excess = total_size - config.retention_bytes

    def predicate(segment: LogSegment, _next: LogSegment | None) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False
    return predicate


def log_start_offset_breached(log_start_offset: int) -> Predicate:
    """Segments wholly below the log start offset (moved by DeleteRecords or the leader)."""
    return lambda _segment, nxt: nxt is not None and nxt.base_offset <= log_start_offset
