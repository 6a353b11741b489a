"""The one-batch client fast path (validate_client_batch) against the general loop.

Log.append tries validate_client_batch first for a leader's client append and falls back
to validate_append when it returns None. These tests hold it to that contract: on every
batch it accepts it answers exactly what validate_append answers (info and the bytes
written), and every batch it must not handle, bad ones included, is left to the general
loop, so refusals keep their errors.
"""
from __future__ import annotations

import dataclasses
import os
import struct

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalike.records.header import CONTROL_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK
from kafkalike.storage import log as log_module
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import (
    CorruptRecordError, InvalidRecordError, InvalidTimestampError, RecordTooLargeError,
)
from kafkalike.storage.log import Log
from kafkalike.storage.validation import (
    AppendOrigin, AppendRules, validate_append, validate_client_batch,
)
from tests.unit.test_storage_batches import BASE_TIMESTAMP, make_batch

NOW = BASE_TIMESTAMP + 5_000
RULES = AppendRules.from_config(LogConfig())


def both(buf: bytes, rules: AppendRules = RULES, *, next_offset: int = 0, leader_epoch: int | None = None,
         latest_epoch: int | None = None, now: int = NOW):
    fast = validate_client_batch(buf, rules, next_offset, leader_epoch, now, latest_epoch)
    general = validate_append(buf, rules, next_offset, True, leader_epoch, AppendOrigin.CLIENT, now,
                              latest_epoch, "t-0")
    return fast, general


def same(fast, general) -> None:
    assert fast is not None
    assert dataclasses.asdict(fast[0]) == dataclasses.asdict(general[0])
    assert b"".join(bytes(p) for p in fast[1]) == b"".join(bytes(p) for p in general[1])


batches = st.builds(
    lambda values, first_ts, spread, epoch, idempotent, txn, pid, seq: make_batch(
        values, timestamps=[first_ts + i * spread for i in range(len(values))], epoch=epoch,
        attributes=TRANSACTIONAL_MASK if txn and idempotent else 0,
        producer_id=pid if idempotent else -1, producer_epoch=3 if idempotent else -1,
        base_sequence=seq if idempotent else -1),
    st.lists(st.binary(max_size=300), min_size=1, max_size=20),
    st.sampled_from([BASE_TIMESTAMP, -1, -7, 0, NOW + 10**9]),
    st.integers(0, 1000),
    st.sampled_from([-1, 0, 4, 9]),
    st.booleans(), st.booleans(),
    st.integers(0, 2**40),
    st.sampled_from([0, 17, 2**31 - 3, 2**31 - 1]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches, next_offset=st.integers(0, 2**40), leader_epoch=st.sampled_from([None, -1, 0, 4, 7]),
       latest_epoch=st.sampled_from([None, 0, 4, 9]))
def test_the_fast_path_answers_what_the_general_loop_answers(batch, next_offset, leader_epoch, latest_epoch):
    same(*both(batch, next_offset=next_offset, leader_epoch=leader_epoch, latest_epoch=latest_epoch))


def test_a_time_limit_is_checked_the_same_way():
    limited = dataclasses.replace(RULES, timestamp_limit_ms=10_000)
    same(*both(make_batch([b"a", b"b"]), limited))
    same(*both(make_batch([b"a"], timestamps=[-1]), limited))  # NO_TIMESTAMP is exempt
    late = make_batch([b"a"], timestamps=[NOW + 20_000])
    assert validate_client_batch(late, limited, 0, None, NOW) is None
    with pytest.raises(InvalidTimestampError):
        validate_append(late, limited, 0, True, None, AppendOrigin.CLIENT, NOW)


def _recrc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def _patched(fmt: str, offset: int, value: int, *, fix_crc: bool = True):
    def damage(batch: bytes) -> bytes:
        buf = bytearray(batch)
        struct.pack_into(fmt, buf, offset, value)
        return _recrc(buf) if fix_crc else bytes(buf)
    return damage


# (how to damage a valid batch, what the general loop raises for it)
REFUSED = {
    "crc": (lambda b: b[:-1] + bytes([b[-1] ^ 1]), CorruptRecordError),
    "magic": (_patched(">b", 16, 1, fix_crc=False), CorruptRecordError),
    "short length": (_patched(">i", 8, 20, fix_crc=False), CorruptRecordError),
    "base offset": (_patched(">q", 0, 5, fix_crc=False), InvalidRecordError),
    "count": (_patched(">i", 57, 3), InvalidRecordError),
    "control": (_patched(">h", 21, CONTROL_MASK), InvalidRecordError),
    "negative sequence": (_patched(">qhi", 43, 0), None),  # built below: pid 7, sequence -1
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_bad_batches_are_left_to_the_general_loop_and_refused_as_before(case):
    damage, error = REFUSED[case]
    if case == "negative sequence":
        bad = make_batch([b"a"], producer_id=7, producer_epoch=0, base_sequence=-1)
        error = InvalidRecordError
    else:
        bad = damage(make_batch([b"a", b"b"]))
    assert validate_client_batch(bad, RULES, 0, None, NOW) is None
    with pytest.raises(error):
        validate_append(bad, RULES, 0, True, None, AppendOrigin.CLIENT, NOW)


def test_too_large_is_left_to_the_general_loop():
    batch = make_batch([b"x" * 500])
    small = dataclasses.replace(RULES, max_message_bytes=len(batch) - 1)
    assert validate_client_batch(batch, small, 0, None, NOW) is None
    with pytest.raises(RecordTooLargeError):
        validate_append(batch, small, 0, True, None, AppendOrigin.CLIENT, NOW)


@pytest.mark.parametrize("buf", [
    make_batch([b"a"]) + make_batch([b"b"]),            # two batches
    make_batch([b"a"]) + make_batch([b"b"])[:30],       # a torn trailing batch
    make_batch([b"a"])[:40],                            # shorter than a header
    make_batch([b"a"], attributes=TIMESTAMP_TYPE_MASK),  # a client-set LogAppendTime bit
], ids=["two batches", "torn tail", "short", "log append time bit"])
def test_what_the_fast_path_does_not_handle_goes_to_the_general_loop(buf):
    assert validate_client_batch(buf, RULES, 0, None, NOW) is None
    validate_append(buf, RULES, 0, True, None, AppendOrigin.CLIENT, NOW)  # and is fine there


@pytest.mark.parametrize("config", [LogConfig(message_timestamp_type="LogAppendTime"),
                                    LogConfig(cleanup_policy=["compact"])],
                         ids=["LogAppendTime topic", "compacted topic"])
def test_topics_that_change_or_decode_batches_use_the_general_loop(config):
    assert validate_client_batch(make_batch([b"a"], key=b"k"), AppendRules.from_config(config), 0, None,
                                 NOW) is None


def _files(directory: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith((".log", ".index", ".timeindex")):
            with open(os.path.join(directory, name), "rb") as f:
                out[name] = f.read().rstrip(b"\0") if name.endswith("index") else f.read()
    return out


def test_a_log_written_through_the_fast_path_is_the_log_the_general_loop_writes(shm_path, monkeypatch):
    """Offsets, epochs, producer state, rolls and index entries all come out the same."""
    config = LogConfig(segment_bytes=6000, index_interval_bytes=700)
    appends = [(make_batch([bytes([i % 251]) * (20 + 7 * i)] * (1 + i % 4),
                           timestamps=[BASE_TIMESTAMP + 10 * i + j for j in range(1 + i % 4)],
                           producer_id=5 if i % 3 == 0 else -1, producer_epoch=0 if i % 3 == 0 else -1,
                           base_sequence=(i // 3) * 4 if i % 3 == 0 else -1),
                3 if i < 20 else 4) for i in range(40)]
    # Every third batch is idempotent with sequences 0, 4, 8, ...: fix them to follow on.
    seq = 0
    fixed = []
    for batch, epoch in appends:
        pid = struct.unpack_from(">q", batch, 43)[0]
        if pid >= 0:
            buf = bytearray(batch)
            struct.pack_into(">i", buf, 53, seq)
            seq += struct.unpack_from(">i", buf, 57)[0]
            batch = _recrc(buf)
        fixed.append((batch, epoch))

    def run(name: str):
        log = Log(os.path.join(shm_path, name), config, clock=lambda: NOW)
        infos = [dataclasses.asdict(log.append(batch, leader_epoch=epoch, now_ms=NOW)) for batch, epoch in fixed]
        infos.append(dataclasses.asdict(log.append(fixed[-1][0], leader_epoch=4, now_ms=NOW)))  # a retry
        state = (log.log_end_offset, len(log.segments), log.leader_epoch_cache.entries(),
                 sorted((p.producer_id, p.last_seq) for p in log.active_producers()))
        log.close()
        return infos, state, _files(os.path.join(shm_path, name))

    fast = run("fast-0")
    calls = []
    monkeypatch.setattr(log_module, "validate_client_batch", lambda *a: calls.append(a) and None)
    general = run("general-0")
    assert calls  # the general run really went through the general loop
    assert fast == general
    assert fast[1][1] > 1  # and the log rolled along the way
