"""log.cleaner.threads and log.cleaner.io.max.bytes.per.second (kafkalike.storage.cleaner):
N threads clean different logs at the same time and never the same log twice at once,
each with its share of the dedupe buffer; reconfigure() restarts them with a new count,
as Kafka 2.8's LogCleaner.reconfigure; the I/O throttle (Kafka's Throttler) holds the
bytes read and written to its rate, on a fake clock."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from kafkalike.storage.cleaner import BYTES_PER_MAP_ENTRY, LogCleaner, Throttler
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.log import Log
from tests.unit.test_storage_cleaner import CONFIG, NOW, Rec, append, read_all, settle


def dirty_log(root: Path, topic: str, keys: int = 5, rounds: int = 4) -> Log:
    log = Log(str(root / f"{topic}-0"), CONFIG, clock=lambda: NOW)
    for r in range(rounds):
        for k in range(keys):
            append(log, [(b"k%d" % k, b"v%d-%d" % (r, k) * 10)])
    settle(log)
    return log


def wait_for(predicate, timeout: float = 20, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_two_threads_clean_two_logs_at_the_same_time(shm_path):
    logs = [dirty_log(shm_path, "a"), dirty_log(shm_path, "b")]
    both_inside = threading.Barrier(2, timeout=20)
    seen: dict[TopicPartition, str] = {}

    def hook(step, item, old):
        if step == "cleaned" and item.topic_partition not in seen:
            seen[item.topic_partition] = threading.current_thread().name
            both_inside.wait()        # breaks (and the pass fails) unless the other log is being cleaned too

    cleaner = LogCleaner(logs, clock=lambda: NOW, threads=2, backoff_ms=10, hook=hook)
    cleaner.start()
    try:
        wait_for(lambda: all(cleaner.checkpointed_offset(lg.topic_partition) == 20 for lg in logs),
                 what="both logs to be cleaned")
    finally:
        cleaner.stop()
    assert sorted(seen.values()) == ["kafka-log-cleaner-thread-0", "kafka-log-cleaner-thread-1"]
    assert not any(cleaner.is_uncleanable(lg) for lg in logs)
    for lg in logs:
        assert read_all(lg) == [Rec(15 + k, b"k%d" % k, b"v3-%d" % k * 10) for k in range(5)]


def test_a_log_being_cleaned_is_not_handed_to_another_thread(shm_path):
    log = dirty_log(shm_path, "only")
    cleaner = LogCleaner([log], clock=lambda: NOW)
    plan = cleaner.grab_and_claim()
    assert plan is not None and cleaner.in_progress() == {plan.topic_partition}
    assert cleaner.grab_and_claim() is None           # the only dirty log is claimed
    cleaner.release(plan)
    assert cleaner.grab_and_claim() is not None


def test_many_threads_and_one_dirty_log_clean_it_once_at_a_time(shm_path):
    log = dirty_log(shm_path, "only")
    inside = []
    release = threading.Event()
    overlaps = []

    def hook(step, item, old):
        if step == "cleaned":
            inside.append(threading.current_thread().name)
            if len(inside) > 1:
                overlaps.append(list(inside))
            release.wait(20)
            inside.remove(threading.current_thread().name)

    cleaner = LogCleaner([log], clock=lambda: NOW, threads=3, backoff_ms=5, hook=hook)
    cleaner.start()
    try:
        wait_for(lambda: inside, what="a thread to start cleaning")
        time.sleep(0.3)                                # the two others look for work, many times
        assert len(inside) == 1 and overlaps == []
        assert cleaner.in_progress() == {log.topic_partition}
        release.set()
        wait_for(lambda: cleaner.checkpointed_offset(log.topic_partition) == 20, what="the pass to finish")
    finally:
        release.set()
        cleaner.stop()
    assert overlaps == [] and cleaner.in_progress() == set()


def test_each_thread_gets_its_share_of_the_dedupe_buffer(shm_path):
    one = LogCleaner([], dedupe_buffer_size=48_000_000, io_buffer_load_factor=0.5)
    assert one.cleaner.offset_map.capacity == 48_000_000 // BYTES_PER_MAP_ENTRY // 2
    four = LogCleaner([], threads=4, dedupe_buffer_size=48_000_000, io_buffer_load_factor=0.5)
    assert four.cleaner.offset_map.capacity == 12_000_000 // BYTES_PER_MAP_ENTRY // 2


def test_reconfigure_restarts_the_threads_with_the_new_count(shm_path):
    cleaner = LogCleaner([dirty_log(shm_path, "t")], clock=lambda: NOW, backoff_ms=10)
    cleaner.start()
    try:
        assert cleaner.thread_names == ["kafka-log-cleaner-thread-0"]
        first = list(cleaner._threads)
        cleaner.reconfigure(threads=2, dedupe_buffer_size=cleaner.dedupe_buffer_size)
        assert cleaner.thread_names == ["kafka-log-cleaner-thread-0", "kafka-log-cleaner-thread-1"]
        assert not any(t.is_alive() for t in first)    # the old thread stopped first
        assert cleaner.cleaner.offset_map.capacity == int(
            cleaner.dedupe_buffer_size // 2 // BYTES_PER_MAP_ENTRY * cleaner.io_buffer_load_factor)
        running = list(cleaner._threads)
        # The I/O rate and the backoff change in place: the threads keep running.
        cleaner.reconfigure(threads=2, io_max_bytes_per_second=1000.0, backoff_ms=20)
        assert cleaner._threads == running and cleaner.throttler.rate == 1000.0 and cleaner.backoff_ms == 20
        wait_for(lambda: cleaner.checkpointed_offset(TopicPartition("t", 0)) == 20, what="a pass by the new threads")
    finally:
        cleaner.stop()
    assert not cleaner.running
    cleaner.reconfigure(threads=1)                     # a stopped cleaner stays stopped
    assert not cleaner.running and cleaner.num_threads == 1


class FakeTime:
    """A clock that moves `step` per reading (the work between two reads) and by every nap."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.naps: list[float] = []

    def clock(self) -> float:
        self.now += self.step
        return self.now

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.now += seconds


def test_the_throttler_holds_the_rate_as_kafkas_does():
    t = FakeTime(step=0.1)
    throttler = Throttler(1000.0, clock=t.clock, sleep=t.sleep)
    observed = 0
    for _ in range(100):
        throttler.maybe_throttle(500)                  # 500 bytes each 0.1 s: 5000 B/s unthrottled
        observed += 500
    assert t.naps and observed / t.now <= 1000 * 1.05
    assert observed / t.now >= 1000 * 0.8
    # Under the rate: no nap.
    slow = FakeTime(step=1.0)
    Throttler(1000.0, clock=slow.clock, sleep=slow.sleep).maybe_throttle(10)
    assert slow.naps == []
    # Kafka's default (Double.MaxValue) never throttles, nor reads the clock.
    unlimited = FakeTime(step=0.1)
    Throttler(clock=unlimited.clock, sleep=unlimited.sleep).maybe_throttle(10**12)
    assert unlimited.naps == [] and unlimited.now == 0.1      # only the constructor's reading


def test_the_cleaner_throttles_its_reads_and_writes(shm_path):
    log = dirty_log(shm_path, "io", keys=20, rounds=10)
    size = sum(s.size for s in log.segments)
    cleaner = LogCleaner([log], clock=lambda: NOW, io_max_bytes_per_second=2000.0)
    t = FakeTime(step=0.05)
    cleaner.throttler._clock, cleaner.throttler._sleep = t.clock, t.sleep
    cleaner.throttler._period_start = t.clock()
    counted = []
    throttle = cleaner.throttler.maybe_throttle
    cleaner.throttler.maybe_throttle = lambda n: (counted.append(n), throttle(n))    # type: ignore[method-assign]
    cleaner.cleaner = cleaner._new_cleaner()
    result = cleaner.clean_once()
    assert result.completed
    assert sum(counted) >= size + result.stats.bytes_written     # every byte read (some twice) and written
    assert t.naps and sum(counted) / t.now <= 2000 * 1.1
