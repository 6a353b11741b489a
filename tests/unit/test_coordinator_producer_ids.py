"""ProducerIdManager and the InitProducerId handler over an in-memory block store."""
from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer

from kafkalike.broker.authorizer import ALLOW_ALL
from kafkalike.broker.handlers.init_producer_id import handle_init_producer_id
from kafkalike.coordinator.producer_id_manager import ProducerIdManager
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalike.zkdata.znodes import ProducerIdBlock, ProducerIdBlockZNode


class MemoryStore:
    """/latest_producer_id_block as bytes and a data version; answers may be held back."""

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.version = -1            # no znode yet
        self.hold = False
        self.held: list[defer.Deferred] = []
        self.before_write = None     # lets a test slip in a rival broker's write

    def get_producer_id_block(self):
        answer = (ProducerIdBlockZNode.decode(self.data), self.version)
        if self.hold:
            d = defer.Deferred()
            self.held.append((d, answer))
            return d
        return defer.succeed(answer)

    def release(self) -> None:
        held, self.held = self.held, []
        for d, answer in held:
            d.callback(answer)

    def conditional_set_producer_id_block(self, block, expected_version):
        if self.before_write is not None:
            rival, self.before_write = self.before_write, None
            rival()
        if expected_version != self.version:
            return defer.succeed(False)
        self.data, self.version = ProducerIdBlockZNode.encode(block), self.version + 1
        return defer.succeed(True)


def ids(manager: ProducerIdManager, n: int) -> list[int]:
    got: list[int] = []
    for _ in range(n):
        manager.generate_producer_id().addCallback(got.append)
    return got


def test_ids_are_consecutive_and_blocks_follow_each_other_in_the_znode():
    store = MemoryStore()
    manager = ProducerIdManager(3, store, block_size=10, prefetch_when_left=2)
    assert ids(manager, 25) == list(range(25))
    assert ProducerIdBlockZNode.decode(store.data) == ProducerIdBlock(3, 20, 29)


def test_a_rival_brokers_claim_is_skipped_not_shared():
    store = MemoryStore()
    rival = ProducerIdManager(7, store, block_size=10)

    def rival_claims():
        ids(rival, 1)
    store.before_write = rival_claims
    manager = ProducerIdManager(1, store, block_size=10)
    mine = ids(manager, 3)
    assert mine == [10, 11, 12]               # block 0-9 went to the rival, re-read, next block
    assert ids(rival, 1) == [1]
    assert ProducerIdBlockZNode.decode(store.data) == ProducerIdBlock(1, 10, 19)


def test_ids_wait_for_a_slow_store_and_arrive_in_request_order():
    store = MemoryStore()
    store.hold = True
    manager = ProducerIdManager(0, store, block_size=5, prefetch_when_left=1)
    got = ids(manager, 3)
    assert got == []                          # nothing until ZooKeeper answers
    store.release()
    assert got == [0, 1, 2]
    got += ids(manager, 1)                    # the 4th is served from the block at once...
    assert got == [0, 1, 2, 3]
    assert len(store.held) == 1               # ...and the next block is already being claimed
    store.release()
    assert ids(manager, 3) == [4, 5, 6]


def test_a_failed_claim_fails_the_waiting_requests_and_the_next_request_retries():
    store = MemoryStore()
    manager = ProducerIdManager(0, store, block_size=5)
    store.get_producer_id_block = lambda: defer.fail(ConnectionError("zk down"))
    errors: list = []
    manager.generate_producer_id().addErrback(errors.append)
    assert len(errors) == 1 and errors[0].check(ConnectionError)
    del store.get_producer_id_block
    assert ids(manager, 1) == [0]


def call(version: int, **fields):
    ctx = SimpleNamespace(version=version, producer_ids=ProducerIdManager(0, MemoryStore()), transactions=None,
                          authorizer=ALLOW_ALL)
    result = handle_init_producer_id(ctx, InitProducerIdRequest(transaction_timeout_ms=60000, **fields))
    if isinstance(result, defer.Deferred):
        out: list = []
        result.addCallback(out.append)
        result = out[0]
    return result.error_code, result.producer_id, result.producer_epoch


def test_an_idempotent_producer_gets_a_new_id_with_epoch_zero_at_every_version():
    for version in range(5):
        assert call(version, transactional_id=None) == (0, 0, 0)


def test_an_old_id_and_epoch_still_get_a_fresh_id_as_in_kafka():
    assert call(3, transactional_id=None, producer_id=42, producer_epoch=3) == (0, 0, 0)


def test_half_a_producer_identity_is_an_invalid_request():
    assert call(4, transactional_id=None, producer_id=42, producer_epoch=-1)[0] == ErrorCode.INVALID_REQUEST


def test_transactional_ids_wait_for_a_running_transaction_coordinator():
    assert call(1, transactional_id="txn-1") == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1)
    assert call(1, transactional_id="")[0] == ErrorCode.INVALID_REQUEST
