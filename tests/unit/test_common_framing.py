"""Kafka's size-prefixed framing, fed the way TCP delivers bytes: in arbitrary pieces."""
from __future__ import annotations

import random

import pytest
from twisted.internet.testing import StringTransport

from kafkalike.common.framing import SizePrefixedReceiver


class Collector(SizePrefixedReceiver):
    MAX_LENGTH = 1 << 20

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.too_long: list[int] = []

    def stringReceived(self, frame: bytes) -> None:
        self.frames.append(frame)

    def lengthLimitExceeded(self, length: int) -> None:
        self.too_long.append(length)
        self.transport.loseConnection()


def framed(*frames: bytes) -> bytes:
    return b"".join(len(f).to_bytes(4, "big") + f for f in frames)


def connected() -> Collector:
    receiver = Collector()
    receiver.makeConnection(StringTransport())
    return receiver


FRAMES = [b"", b"a", bytes(range(256)) * 40, b"xyz" * 1000, b""]


@pytest.mark.parametrize("piece", [1, 3, 4, 5, 4096, 1 << 20])
def test_frames_come_out_whole_however_the_bytes_are_cut(piece):
    receiver = connected()
    data = framed(*FRAMES)
    for i in range(0, len(data), piece):
        receiver.dataReceived(data[i:i + piece])
    assert receiver.frames == FRAMES


def test_random_cuts_keep_every_frame_intact():
    rng = random.Random(7)
    frames = [rng.randbytes(rng.randrange(0, 70_000)) for _ in range(60)]
    data = framed(*frames)
    receiver = connected()
    pos = 0
    while pos < len(data):
        step = rng.choice([1, 2, 7, 100, 65536, 200_000])
        receiver.dataReceived(data[pos:pos + step])
        pos += step
    assert receiver.frames == frames


def test_a_frame_over_the_limit_closes_and_nothing_after_it_is_delivered():
    receiver = connected()
    receiver.dataReceived(framed(b"ok") + (Collector.MAX_LENGTH + 1).to_bytes(4, "big") + b"zz" + framed(b"later"))
    assert receiver.frames == [b"ok"]
    assert receiver.too_long == [Collector.MAX_LENGTH + 1]
    assert receiver.transport.disconnecting


def test_a_negative_size_is_over_the_limit():
    receiver = connected()
    receiver.dataReceived((-5).to_bytes(4, "big", signed=True))
    assert receiver.too_long == [-5] and receiver.frames == []
