"""A consume-transform-produce application for the exactly-once test (run as a subprocess).

    python3 -m tests.integration.eos_app BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID

Reads INPUT with a kafkalike consumer in GROUP (read_committed), writes b"out-" + value to
OUTPUT, and commits the consumed offsets in the same transaction, one transaction per poll,
forever. It prints "open N" once a transaction's records are in the output's log, and
"committed N" after each commit. The test kills it with SIGKILL inside a transaction and
starts it again; the committed output must hold each input record exactly once.
"""
from __future__ import annotations

import sys
import time

from kafkalike.client.consumer import KafkaConsumer, OffsetAndMetadata
from kafkalike.client.producer import KafkaProducer


def main(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> None:
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                              "linger.ms": 5})
    producer.init_transactions()  # fences a killed predecessor and aborts its open transaction
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                              "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                              "max.poll.records": 25, "session.timeout.ms": 6000,
                              "heartbeat.interval.ms": 1000})
    consumer.subscribe([source])
    total = 0
    while True:
        records = consumer.poll(0.5)
        if not records:
            continue
        producer.begin_transaction()
        for record in records:
            producer.send(sink, b"out-" + record.value, key=record.key)
        producer.flush()  # the records are in the output's log now, not yet committed
        print(f"open {total + len(records)}", flush=True)
        time.sleep(0.05)  # a window for the test's kill -9 inside the transaction
        positions = {tp: OffsetAndMetadata(consumer.position(tp)) for tp in consumer.assignment()}
        producer.send_offsets_to_transaction(positions, consumer.group_metadata())
        producer.commit_transaction()
        total += len(records)
        print(f"committed {total}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])
