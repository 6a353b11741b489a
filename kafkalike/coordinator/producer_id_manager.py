"""Producer ids for idempotent producers, claimed from ZooKeeper in blocks.

Every broker hands out ids, so they must be unique across the cluster: a broker claims
a block of 1000 ids by a conditional write of /latest_producer_id_block (the block
after the one recorded there), and retries from a fresh read when another broker wrote
in between. This is Kafka 2.8's ZooKeeper-mode scheme and znode format, so a cluster
that mixes our brokers with Kafka's never hands out an id twice.

Kafka claims a block synchronously on its request thread. A reactor must not wait on
ZooKeeper, so ids come back as Deferreds: while the current block lasts they fire at
once, and the next block is claimed in the background when the current one runs low,
so a steady stream of InitProducerId requests never waits on ZooKeeper.
"""
from __future__ import annotations

import logging
from typing import Protocol

from twisted.internet import defer

from kafkalike.zkdata.znodes import ProducerIdBlock

log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK_SIZE = 1000
MAX_PRODUCER_ID = (1 << 63) - 1


class ProducerIdBlockStore(Protocol):
    """Where blocks are claimed: KafkaZkClient in the broker, a dict in unit tests."""

    def get_producer_id_block(self) -> defer.Deferred:
        """Fires with (latest block or None, data version; -1 when the znode is absent)."""

    def conditional_set_producer_id_block(self, block: ProducerIdBlock, expected_version: int) -> defer.Deferred:
        """Fires True if the write landed at expected_version, False if someone else won."""


class ProducerIdsExhaustedError(Exception):
    """The cluster has handed out every 64-bit producer id; Kafka fails the same way."""


class ProducerIdManager:
    """Hands out this broker's producer ids; one per broker, used on the reactor thread only."""

    def __init__(self, broker_id: int, store: ProducerIdBlockStore,
                 block_size: int = PRODUCER_ID_BLOCK_SIZE, prefetch_when_left: int | None = None) -> None:
        self.broker_id = broker_id
        self.store = store
        self.block_size = block_size
        # Claim the next block when this many ids are left: early enough that one
        # ZooKeeper round trip finishes before the rest are gone under normal load.
        self.prefetch_when_left = block_size // 10 if prefetch_when_left is None else prefetch_when_left
        self.current: ProducerIdBlock | None = None
        self.next_id = 0
        self._next_block: ProducerIdBlock | None = None
        self._claiming: defer.Deferred | None = None
        self._waiters: list[defer.Deferred] = []

    def generate_producer_id(self) -> defer.Deferred:
        """Fires with a producer id no broker of the cluster has handed out before."""
        waiter: defer.Deferred = defer.Deferred()
        self._waiters.append(waiter)
        self._serve()
        return waiter

    # -- internals ----------------------------------------------------------------------

    def _left(self) -> int:
        return 0 if self.current is None else self.current.block_end - self.next_id + 1

    def _serve(self) -> None:
        while self._waiters:
            if self._left() == 0 and self._next_block is not None:
                self.current, self._next_block = self._next_block, None
                self.next_id = self.current.block_start
            if self._left() == 0:
                break
            pid = self.next_id
            self.next_id += 1
            self._waiters.pop(0).callback(pid)
        if self._next_block is None and self._claiming is None and self._left() <= self.prefetch_when_left:
            self._claiming = defer.ensureDeferred(self._claim())
            self._claiming.addCallbacks(self._claimed, self._claim_failed)

    async def _claim(self) -> ProducerIdBlock:
        while True:
            latest, version = await self.store.get_producer_id_block()
            start = 0 if latest is None else latest.block_end + 1
            if start > MAX_PRODUCER_ID - self.block_size:
                raise ProducerIdsExhaustedError("the cluster has no producer ids left to hand out")
            block = ProducerIdBlock(self.broker_id, start, start + self.block_size - 1)
            if await self.store.conditional_set_producer_id_block(block, version):
                log.info("Acquired new producerId block %s by writing to Zk", block)
                return block
            log.debug("producer id block write at version %d lost a race; retrying", version)

    def _claimed(self, block: ProducerIdBlock) -> None:
        self._claiming = None
        self._next_block = block
        self._serve()

    def _claim_failed(self, failure) -> None:
        # Waiters get the error (the handler turns it into an error code); the next
        # request starts a fresh claim.
        self._claiming = None
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.errback(failure)
