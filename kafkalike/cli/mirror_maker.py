"""kafka-mirror-maker: Kafka 2.8's MirrorMaker (kafka.tools.MirrorMaker), copying topics
from one cluster to another.

Each of --num.streams threads owns a consumer of the source cluster (--consumer.config,
subscribed to the --whitelist regex in the config's group, client id group-i) and hands
every record to one producer of the target cluster (--producer.config): same topic, key,
value, headers and timestamp, the partition left to the target's partitioner. Nothing
is lost on the way, as 2.8 arranges it: the consumer never auto-commits; the offsets
of what was handed over are committed only after the producer has flushed, every
--offset.commit.interval.ms, before a rebalance takes partitions away, and at the end;
the producer defaults to acks=all, one request in flight, no delivery timeout and no
send timeout. A record the target refuses stops the mirror maker (exit status 255,
without committing) unless --abort.on.send.failure false, when it is logged and skipped.
SIGTERM or Ctrl-C flushes, commits and closes.

--message.handler and --consumer.rebalance.listener name Java classes in Kafka; here they
name Python classes ("package.module.Class", made with the --*.args string when given):
a handler's handle(record) returns the ProducerRecords to send for a ConsumerRecord.
"""
from __future__ import annotations

import importlib
import logging
import re
import signal
import sys
import threading
import time
from typing import Any, Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import JavaError, Option, tools_logging
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.coordinator import ConsumerRebalanceListener, OffsetAndMetadata
from kafkalike.client.errors import CommitFailedError, KafkaError, KafkaTimeoutError, WakeupError
from kafkalike.client.metadata import TopicPartition
from kafkalike.client.producer import KafkaProducer, ProducerRecord
from kafkalike.common.topics import include_list_regex
from kafkalike.properties import load as load_properties

log = logging.getLogger("kafkalike.cli.mirror_maker")
JAVA_LOGGERS = {"kafkalike.cli.mirror_maker": "kafka.tools.MirrorMaker$"}
HELP_MESSAGE = "This tool helps to continuously copy data between two Kafka clusters."
OPTIONS = command_default.with_defaults(
    Option("consumer.config", "Embedded consumer config for consuming from the source cluster.", "config file"),
    Option("new.consumer", "DEPRECATED Use new consumer in mirror maker (this is the default so this option will be "
           "removed in a future version)."),
    Option("producer.config", "Embedded producer config.", "config file"),
    Option("num.streams", "Number of consumption streams.", "Number of threads", type_name="Integer", default="1"),
    Option("whitelist", "Whitelist of topics to mirror.", "Java regex (String)"),
    Option("offset.commit.interval.ms", "Offset commit interval in ms.", "offset commit interval in millisecond",
           type_name="Integer", default="60000"),
    Option("consumer.rebalance.listener", "The consumer rebalance listener to use for mirror maker consumer.",
           "A custom rebalance listener of type ConsumerRebalanceListener"),
    Option("rebalance.listener.args", "Arguments used by custom rebalance listener for mirror maker consumer.",
           "Arguments passed to custom rebalance listener constructor as a string."),
    Option("message.handler", "Message handler which will process every record in-between consumer and producer.",
           "A custom message handler of type MirrorMakerMessageHandler"),
    Option("message.handler.args", "Arguments used by custom message handler for mirror maker.",
           "Arguments passed to message handler constructor."),
    Option("abort.on.send.failure", "Configure the mirror maker to exit on a failed send.",
           "Stop the entire mirror maker when a send failure occurs", default="true"),
)
STRATEGY_WARNING = ("WARNING: The default partition assignment strategy of the mirror maker will change from 'range' "
                    "to 'roundrobin' in an upcoming release (so that better load balancing can be achieved). If you "
                    "prefer to make this switch in advance of that release add the following to the corresponding "
                    "config: 'partition.assignment.strategy=org.apache.kafka.clients.consumer.RoundRobinAssignor'")
NO_DATA_LOSS_PRODUCER = {"delivery.timeout.ms": str(2**31 - 1), "max.block.ms": str(2**63 - 1), "acks": "all",
                         "max.in.flight.requests.per.connection": "1"}
POLL_S = 1.0   # as 2.8: a commit interval above a second is never held up by an idle poll


def default_property(props: dict[str, str], name: str, default: str) -> None:
    """maybeSetDefaultProperty: the safe default unless the user chose otherwise, and say so."""
    value = props.setdefault(name, default)
    if value != default:
        log.info("Property %s is overridden to %s - data loss or message reordering is possible.", name, value)


def create_object(class_name: str, args: str | None) -> Any:
    """CoreUtils.createObject for a Python class named by its dotted path."""
    module_name, _, attr = class_name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attr) if module_name else None
    except ImportError:
        cls = None
    if cls is None:
        raise JavaError("java.lang.ClassNotFoundException", class_name)
    return cls(args) if args is not None else cls()


class DefaultMessageHandler:
    """The record as it came, to the topic of the same name; a record without a timestamp
    gets the producer's time."""

    def handle(self, record) -> list[ProducerRecord]:
        timestamp = record.timestamp if record.timestamp >= 0 else None
        return [ProducerRecord(record.topic, record.value, record.key, None, record.headers or None, timestamp)]


class MirrorMaker:
    """The state 2.8 keeps in the MirrorMaker object: one producer, the threads, and the
    flags that stop them."""

    def __init__(self, producer: KafkaProducer, handler: Any, abort_on_send_failure: bool,
                 commit_interval_s: float, sync: bool = False) -> None:
        self.producer = producer
        self.sync = sync             # producer.type=sync: each send waits for its answer
        self.handler = handler
        self.abort_on_send_failure = abort_on_send_failure
        self.commit_interval_s = commit_interval_s
        self.exiting_on_send_failure = False
        self.shutting_down = threading.Event()
        self.dropped = 0
        self.threads: list[MirrorMakerThread] = []
        self.last_successful_commit_ms = -1

    def send(self, record: ProducerRecord) -> None:
        if self.sync:
            self.producer.send(record).get()    # a failure ends the thread, as 2.8's get() throws
            return

        def on_completion(metadata, error) -> None:
            if error is None:
                return
            log.error("Error when sending message to topic %s with key: %s, value: %s with error:", record.topic,
                      _describe(record.key), _describe(record.value), exc_info=error)
            if self.abort_on_send_failure:
                log.info("Closing producer due to send failure.")
                self.exiting_on_send_failure = True
                for thread in self.threads:
                    thread.consumer.wakeup()
            self.dropped += 1
        self.producer.send(record, callback=on_completion)

    def commit(self, thread: "MirrorMakerThread") -> None:
        """commitOffsets: what was handed over since the last commit, unless a send failed."""
        if self.exiting_on_send_failure:
            log.info("Exiting on send failure, skip committing offsets.")
            return
        retry = 0
        while True:
            try:
                if thread.offsets:
                    thread.consumer.commit_sync({tp: OffsetAndMetadata(o) for tp, o in thread.offsets.items()})
                    thread.offsets.clear()
                self.last_successful_commit_ms = int(time.time() * 1000)
                return
            except WakeupError:
                continue       # the one wakeup is shutdown's: commit, then the loop sees the flag
            except KafkaTimeoutError:
                retry += 1
                log.warning("Failed to commit offsets because the offset commit request processing can not be "
                            "completed in time. If you see this regularly, it could indicate that you need to "
                            "increase the consumer's default.api.timeout.ms Last successful offset commit "
                            "timestamp=%d, retry count=%d", self.last_successful_commit_ms, retry)
                time.sleep(0.1)
            except CommitFailedError:
                log.warning("Failed to commit offsets because the consumer group has rebalanced and assigned "
                            "partitions to another instance. If you see this regularly, it could indicate that you "
                            "need to either increase the consumer's session.timeout.ms or reduce the number of "
                            "records handled on each iteration with max.poll.records")
                return

    def flush_and_commit(self, thread: "MirrorMakerThread") -> None:
        self.producer.flush()
        if self.exiting_on_send_failure:   # the flush found a failed send: its offset must not be committed
            return
        self.commit(thread)

    @property
    def stopping(self) -> bool:
        return self.exiting_on_send_failure or self.shutting_down.is_set()


class _RevokeListener(ConsumerRebalanceListener):
    """Before partitions go to another member, what was handed over is flushed and committed."""

    def __init__(self, mirror: MirrorMaker, thread: "MirrorMakerThread", custom: Any) -> None:
        self.mirror, self.thread, self.custom = mirror, thread, custom

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.mirror.flush_and_commit(self.thread)
        if self.custom is not None:
            self.custom.on_partitions_revoked(revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        if self.custom is not None:
            self.custom.on_partitions_assigned(assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        pass


class MirrorMakerThread(threading.Thread):
    def __init__(self, mirror: MirrorMaker, consumer: KafkaConsumer, regex: str, listener: Any, index: int) -> None:
        super().__init__(name=f"mirrormaker-thread-{index}", daemon=True)
        self.mirror = mirror
        self.consumer = consumer
        self.regex = regex
        self.listener = listener
        self.offsets: dict[TopicPartition, int] = {}
        self.failed = False

    def run(self) -> None:
        mirror = self.mirror
        try:
            self.consumer.subscribe(re.compile(self.regex), listener=_RevokeListener(mirror, self, self.listener))
            last_commit = time.monotonic()
            while not mirror.stopping:
                try:
                    for record in self.consumer.poll(POLL_S):
                        for out in mirror.handler.handle(record):
                            mirror.send(out)
                        self.offsets[TopicPartition(record.topic, record.partition)] = record.offset + 1
                except WakeupError:
                    pass
                if time.monotonic() - last_commit > mirror.commit_interval_s and not mirror.stopping:
                    mirror.flush_and_commit(self)
                    last_commit = time.monotonic()
        except Exception as error:   # noqa: BLE001 - 2.8 logs any failure as fatal and stops everything
            mirror.exiting_on_send_failure = True
            self.failed = True
            log.critical("Mirror maker thread failure due to ", exc_info=error)
        finally:
            try:
                log.info("Flushing producer.")
                mirror.producer.flush()
                log.info("Committing consumer offsets.")
                mirror.commit(self)
            except KafkaError as error:
                log.error("", exc_info=error)
            log.info("Shutting down consumer connectors.")
            self.consumer.close()
            log.info("Mirror maker thread stopped")


def _describe(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


def start(opts, err: TextIO) -> MirrorMaker | None:
    """checkArgs: configs, the producer, the consumers and their threads (not yet started)."""
    consumer_props = load_properties(opts.value("consumer.config"))
    if not opts.has("whitelist"):
        log.error("whitelist must be specified")
        return None
    if "partition.assignment.strategy" not in consumer_props:
        err.write(STRATEGY_WARNING + "\n")
    producer_props = load_properties(opts.value("producer.config"))
    producer_type = producer_props.pop("producer.type", "async")
    for name, value in NO_DATA_LOSS_PRODUCER.items():
        default_property(producer_props, name, value)
    default_property(consumer_props, "enable.auto.commit", "false")
    handler = (create_object(opts.value("message.handler"), opts.value("message.handler.args"))
               if opts.has("message.handler") else DefaultMessageHandler())
    listener = (create_object(opts.value("consumer.rebalance.listener"), opts.value("rebalance.listener.args"))
                if opts.has("consumer.rebalance.listener") else None)
    mirror = MirrorMaker(KafkaProducer(producer_props), handler,
                         (opts.value("abort.on.send.failure") or "").lower() == "true",
                         opts.number("offset.commit.interval.ms") / 1000, sync=producer_type == "sync")
    regex = include_list_regex(opts.value("whitelist") or "")
    group = consumer_props.get("group.id")
    for index in range(opts.number("num.streams")):
        consumer = KafkaConsumer({**consumer_props, "client.id": f"{group}-{index}"})
        mirror.threads.append(MirrorMakerThread(mirror, consumer, regex, listener, index))
    return mirror


def run(mirror: MirrorMaker) -> int:
    """Start the threads and wait; a signal is a clean shutdown, a thread that stops on
    its own (a failed send) stops everything with status 255, as sys.exit(-1) does."""
    stopped_by: list[int] = []

    def on_signal(signum, frame) -> None:
        if not stopped_by:
            stopped_by.append(signum)
            log.info("Start clean shutdown.")
            mirror.shutting_down.set()
            for thread in mirror.threads:
                thread.consumer.wakeup()
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for thread in mirror.threads:
            thread.start()
        while any(t.is_alive() for t in mirror.threads):
            if mirror.exiting_on_send_failure and not mirror.shutting_down.is_set():
                for thread in mirror.threads:
                    thread.consumer.wakeup()
            for thread in mirror.threads:
                thread.join(0.2)
        log.info("Closing producer.")
        mirror.producer.close(0 if mirror.exiting_on_send_failure else None)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stopped_by:
        log.info("Kafka mirror maker shutdown successfully")
        return 128 + stopped_by[0]
    log.critical("Mirror maker thread exited abnormally, stopping the whole mirror maker.")
    return 255


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE, ("consumer.config", "producer.config"))
        with tools_logging(err, JAVA_LOGGERS):
            try:
                mirror = start(opts, err)
            except (OSError, KafkaError, ValueError) as error:
                log.error("Exception when starting mirror maker.", exc_info=error)
                return 1
            if mirror is None:
                return 1
            return run(mirror)
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
