"""A consume-transform-produce application written with confluent-kafka, as a user would
write one, for the exactly-once fault test (run as a subprocess, killed with kill -9):

    python3 -m tests.fault.eos_pipeline_app BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID MAX_PER_TXN

It reads INPUT (read_committed, no auto commit), writes OUTPUT record for record (same
key, value b"out-" + value) and commits the consumed offsets in the same transaction.
Its lines on stdout, for the test to follow it:

    ready                         init_transactions returned (any predecessor is fenced)
    open                          a transaction's records are flushed to the output's log
    held                          the same, and the app now waits there to be killed
    committed {"0": 120, ...}     a transaction committed; the input offsets it committed
    aborted <error>               a transaction was aborted; positions rewound to committed

Errors are handled the way confluent-kafka's documentation says: retriable ones are
retried (and CONCURRENT_TRANSACTIONS, see `retrying`), abortable ones abort the transaction and rewind the consumer to the group's
committed offsets, fatal ones (being fenced) end the process with status 3.

SIGUSR1 asks the app to stop inside its next transaction, after its records are in the
log and before its commit, so that the test's kill -9 lands there every time.
"""
from __future__ import annotations

import json
import signal
import sys
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

# A call that times out ends in an abort by the app itself, well before the coordinator
# would abort the transaction on its timeout and fence this producer (a fatal error).
TIMEOUT_S = 30
HOLD = threading.Event()


def say(line: str) -> None:
    print(line, flush=True)


def rewind(consumer: Consumer) -> None:
    """Back to the group's committed offsets: an aborted transaction's input is read again."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, TIMEOUT_S):
        offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
        consumer.seek(TopicPartition(tp.topic, tp.partition, offset))


def retrying(call) -> None:
    """A transactional call retried while its error is retriable. CONCURRENT_TRANSACTIONS
    (the coordinator still completing the previous transaction, e.g. one a new coordinator
    took over after a kill -9) is retried too: Java's client retries it internally, and
    librdkafka 2.16 returns it from send_offsets_to_transaction marked neither retriable
    nor abortable."""
    while True:
        try:
            call()
            return
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() == KafkaError.CONCURRENT_TRANSACTIONS):
                raise
            time.sleep(0.1)


def main(bootstrap: str, source: str, sink: str, group: str, transactional_id: str, max_per_txn: str) -> int:
    # connections.max.idle.ms: librdkafka 2.16's send_offsets_to_transaction waits, past its
    # timeout, on a group coordinator whose broker left the metadata, until some broker
    # connection goes up or down (librdkafka issues #5511, #5456); closing idle
    # connections gives it that event within seconds once the app is stuck.
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60000, "linger.ms": 5, "connections.max.idle.ms": 3000})
    signal.signal(signal.SIGUSR1, lambda *_: HOLD.set())
    producer.init_transactions(TIMEOUT_S)
    say("ready")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    consumer.subscribe([source])
    try:
        while True:
            messages = [m for m in consumer.consume(int(max_per_txn), 0.5) if not m.error()]
            if not messages:
                continue
            try:
                producer.begin_transaction()
                next_offsets: dict[int, int] = {}
                for m in messages:
                    producer.produce(sink, b"out-" + m.value(), key=m.key())
                    next_offsets[m.partition()] = m.offset() + 1
                producer.flush(TIMEOUT_S)
                say("open")
                if HOLD.is_set():
                    say("held")
                    threading.Event().wait()   # until the kill -9
                retrying(lambda: producer.send_offsets_to_transaction(
                    [TopicPartition(source, p, o) for p, o in next_offsets.items()],
                    consumer.consumer_group_metadata(), TIMEOUT_S))
                retrying(lambda: producer.commit_transaction(TIMEOUT_S))
                say("committed " + json.dumps(next_offsets))
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if not error.txn_requires_abort():
                    raise
                say(f"aborted {error}")
                producer.abort_transaction(TIMEOUT_S)
                rewind(consumer)
    except KafkaException as exc:
        say(f"fatal {exc.args[0]}")
        return 3
    finally:
        consumer.close()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
