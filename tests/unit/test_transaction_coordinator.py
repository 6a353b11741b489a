"""The transaction coordinator on a Clock, over a real ReplicaManager and Log (its records
must really land in __transaction_state), with partition leaders played by a fake
connection that records WriteTxnMarkers and answers as the test says.

InitProducerId with epochs and fencing, AddPartitionsToTxn, EndTxn with the two-phase
commit (PrepareX in the log, markers, CompleteX), timeouts, expiry, and a new
coordinator finishing what the old one left between prepare and complete."""
from __future__ import annotations

import types

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.cli.dump_log_decoders import format_transaction_record
from kafkalike.coordinator.producer_id_manager import ProducerIdManager
from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC, TransactionConfig
from kafkalike.coordinator.transaction.coordinator import TransactionCoordinator
from kafkalike.coordinator.transaction.metadata import (COMPLETE_ABORT, COMPLETE_COMMIT, DEAD, EMPTY, ONGOING,
                                                        PREPARE_ABORT, PREPARE_COMMIT, PREPARE_EPOCH_FENCE,
                                                        IllegalTransactionTransition, TransactionMetadata,
                                                        TransactionState)
from kafkalike.coordinator.transaction.records import read_key, read_value
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersResponse
from kafkalike.records import iter_records
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager
from tests.unit.test_coordinator_membership import fired
from tests.unit.test_coordinator_producer_ids import MemoryStore

START_S = 1_700_000_000
TXN = "txn-a"
TP = ("out", 0)


class FakeLeaders:
    """The metadata cache and the partition leaders' WriteTxnMarkers."""

    def __init__(self) -> None:
        self.topics = {"out": {0: 1, 1: 2}, "__consumer_offsets": {0: 1}}
        endpoint = types.SimpleNamespace(host="h", port=1)
        broker = types.SimpleNamespace(endpoint=lambda listener: endpoint)
        self.brokers = {1: broker, 2: broker}
        self.requests: list = []
        self.error = ErrorCode.NONE
        self.hold = False

    def contains(self, topic):
        return topic in self.topics

    def partition(self, topic, p):
        leader = self.topics.get(topic, {}).get(p)
        return None if leader is None else types.SimpleNamespace(leader=leader)

    def connect(self, host, port):
        leaders = self

        class Conn:
            closed = defer.Deferred()

            def request(self, body, version):
                leaders.requests.append(body)
                R = WriteTxnMarkersResponse
                return defer.succeed(R(markers=[R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
                    R.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                        R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=int(leaders.error))
                        for p in t.partition_indexes]) for t in m.topics]) for m in body.markers]))

            def close(self):
                pass
        return defer.succeed(Conn())

    def markers(self):
        return [(m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch,
                 sorted((t.name, p) for t in m.topics for p in t.partition_indexes))
                for r in self.requests for m in r.markers]


class Harness:
    def __init__(self, path, **overrides):
        self.clock = Clock()
        self.clock.advance(START_S)
        self.log_manager = LogManager([str(path)], LogConfig(), clock=self.now)
        self.replicas = ReplicaManager(0, self.log_manager, self.clock, lambda topic: LogConfig(), self.now)
        settings = dict(transaction_log_num_partitions=1, transaction_log_replication_factor=1)
        settings.update(overrides)
        self.config = TransactionConfig(**settings)
        self.producer_ids = ProducerIdManager(0, MemoryStore())
        self.leaders = FakeLeaders()
        self.coordinator = self.new_coordinator()
        self.lead(epoch=0)

    def now(self) -> int:
        return int(self.clock.seconds() * 1000)

    def new_coordinator(self) -> TransactionCoordinator:
        c = TransactionCoordinator(0, self.config, self.producer_ids, self.replicas, self.leaders, "PLAINTEXT",
                                   self.clock, connect=self.leaders.connect)
        c.startup()
        return c

    def lead(self, epoch: int, coordinator=None) -> None:
        coordinator = coordinator or self.coordinator
        part = self.replicas.get_or_create_partition((TRANSACTION_STATE_TOPIC, 0), True)
        part.make_leader(types.SimpleNamespace(leader=0, leader_epoch=epoch, zk_version=0, controller_epoch=1,
                                               replicas=[0], isr=[0]), self.now())
        coordinator.on_elected(0, epoch)
        self.settle()

    def settle(self) -> None:
        for _ in range(20):
            self.clock.advance(0.1)

    def init(self, txn=TXN, timeout_ms=60000, expected=None):
        r = fired(self.coordinator.init_producer_id(txn, timeout_ms, expected))
        return r.error, r.producer_id, r.producer_epoch

    def add(self, pid, epoch, partitions=(TP,), txn=TXN):
        return fired(self.coordinator.add_partitions_to_transaction(txn, pid, epoch, set(partitions)))

    def end(self, pid, epoch, committed=True, txn=TXN):
        return fired(self.coordinator.end_transaction(txn, pid, epoch, committed))

    def log_states(self) -> list[str]:
        part = self.replicas.partitions[(TRANSACTION_STATE_TOPIC, 0)]
        data = part.log.read(0, 1 << 20, max_offset=part.log.log_end_offset)
        return [str(read_value(read_key(r.key), r.value).state) for r in iter_records(data)]

    def metadata(self, txn=TXN) -> TransactionMetadata:
        return self.coordinator.state.get_transaction_state(txn)[1].metadata


@pytest.fixture
def h(shm_path) -> Harness:
    harness = Harness(shm_path)
    yield harness
    harness.coordinator.shutdown()
    harness.log_manager.shutdown()


def test_init_gives_a_producer_id_and_each_init_a_new_epoch(h):
    error, pid, epoch = h.init()
    assert (error, epoch) == (ErrorCode.NONE, 0)
    assert h.init() == (ErrorCode.NONE, pid, 1)
    assert h.init(txn="other")[1] != pid
    assert h.log_states() == ["Empty", "Empty", "Empty"]


def test_init_refuses_bad_ids_and_timeouts(h):
    assert h.init(txn="")[0] == ErrorCode.INVALID_REQUEST
    assert h.init(timeout_ms=900001)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout_ms=0)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_commit_writes_prepare_then_markers_then_complete(h):
    _e, pid, epoch = h.init()
    assert h.add(pid, epoch, [("out", 0), ("out", 1), ("__consumer_offsets", 0)]) == ErrorCode.NONE
    assert h.metadata().state is ONGOING
    assert h.add(pid, epoch, [("out", 0)]) == ErrorCode.NONE          # already in: no write
    assert h.end(pid, epoch, committed=True) == ErrorCode.NONE
    h.settle()
    assert sorted(h.leaders.markers()) == [
        (pid, epoch, True, 0, [("__consumer_offsets", 0), ("out", 0)]), (pid, epoch, True, 0, [("out", 1)])]
    assert h.log_states() == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert h.end(pid, epoch, committed=True) == ErrorCode.NONE       # a retried commit
    assert h.end(pid, epoch, committed=False) == ErrorCode.INVALID_TXN_STATE
    # the next transaction starts from CompleteCommit
    assert h.add(pid, epoch, [("out", 1)]) == ErrorCode.NONE
    assert h.end(pid, epoch, committed=False) == ErrorCode.NONE
    h.settle()
    assert h.log_states()[-3:] == ["Ongoing", "PrepareAbort", "CompleteAbort"]


def test_wrong_producers_are_refused(h):
    _e, pid, epoch = h.init()
    assert h.add(pid + 1, epoch) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.add(pid, epoch + 1) == ErrorCode.PRODUCER_FENCED
    assert h.add(pid, epoch, txn="unknown") == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.end(pid, epoch) == ErrorCode.INVALID_TXN_STATE             # nothing to end


def test_markers_in_flight_make_others_wait(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    h.leaders.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert h.end(pid, epoch) == ErrorCode.NONE
    h.settle()
    assert h.metadata().state is PREPARE_COMMIT
    assert h.add(pid, epoch) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.init()[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    assert len(h.leaders.requests) > 1                                     # retried
    h.leaders.topics["out"][0] = 2                                         # a new leader takes it
    h.leaders.error = ErrorCode.NONE
    h.settle()
    assert h.log_states()[-1] == "CompleteCommit"


def test_a_deleted_partition_is_dropped_from_the_transaction(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch, [("out", 0), ("out", 1)])
    del h.leaders.topics["out"]
    assert h.end(pid, epoch) == ErrorCode.NONE
    h.settle()
    assert h.leaders.requests == []
    assert h.log_states()[-1] == "CompleteCommit"


def test_a_new_instance_fences_the_old_and_aborts_its_transaction(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    # the new instance must wait while the old one's transaction is aborted
    assert h.init() == (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
    assert h.end(pid, epoch) == ErrorCode.PRODUCER_FENCED                  # fenced at once
    h.settle()
    assert h.leaders.markers() == [(pid, epoch + 1, False, 0, [TP])]
    assert h.init() == (ErrorCode.NONE, pid, epoch + 2)
    assert h.add(pid, epoch) == ErrorCode.PRODUCER_FENCED
    assert h.log_states() == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]


def test_kip_360_expected_epochs(h):
    _e, pid, epoch = h.init()
    assert h.init(expected=(pid, epoch)) == (ErrorCode.NONE, pid, epoch + 1)
    assert h.init(expected=(pid, epoch)) == (ErrorCode.NONE, pid, epoch + 1)   # a retry: same epoch
    assert h.init(expected=(pid + 7, 0))[0] == ErrorCode.PRODUCER_FENCED
    h.init()                                                                   # another instance
    assert h.init(expected=(pid, epoch + 1))[0] == ErrorCode.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_the_producer_id(h):
    _e, pid, _epoch = h.init()
    h.metadata().producer_epoch = 32766
    error, new_pid, epoch = h.init()
    assert (error, epoch) == (ErrorCode.NONE, 0) and new_pid != pid


def test_a_transaction_past_its_timeout_is_aborted(shm_path):
    h = Harness(shm_path, abort_timed_out_transactions_interval_ms=1000)
    try:
        _e, pid, epoch = h.init(timeout_ms=5000)
        h.add(pid, epoch)
        h.clock.advance(3)
        assert h.metadata().state is ONGOING
        h.clock.advance(3)
        h.settle()
        assert h.log_states()[-2:] == ["PrepareAbort", "CompleteAbort"]
        assert h.end(pid, epoch) == ErrorCode.PRODUCER_FENCED
        assert h.init()[2] == epoch + 2
    finally:
        h.coordinator.shutdown()
        h.log_manager.shutdown()


def test_an_idle_transactional_id_expires(shm_path):
    h = Harness(shm_path, transactional_id_expiration_ms=10_000, remove_expired_transactional_ids_interval_ms=1000)
    try:
        _e, pid, _epoch = h.init()
        h.clock.advance(12)
        assert h.coordinator.state.get_transaction_state(TXN) == (None, None)
        part = h.replicas.partitions[(TRANSACTION_STATE_TOPIC, 0)]
        data = part.log.read(0, 1 << 20, max_offset=part.log.log_end_offset)
        assert [r.value for r in iter_records(data)][-1] is None                # a tombstone
        assert h.init()[1] != pid
    finally:
        h.coordinator.shutdown()
        h.log_manager.shutdown()


def test_a_new_coordinator_completes_a_prepared_commit(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    h.leaders.error = ErrorCode.NOT_LEADER_OR_FOLLOWER                      # markers cannot land yet
    assert h.end(pid, epoch) == ErrorCode.NONE
    h.settle()
    h.coordinator.on_resigned(0, 1)
    h.coordinator.shutdown()
    h.leaders.error = ErrorCode.NONE
    h.leaders.requests.clear()
    h.coordinator = h.new_coordinator()
    h.lead(epoch=2)
    assert h.leaders.markers() == [(pid, epoch, True, 2, [TP])]            # the new coordinator epoch
    assert h.log_states()[-2:] == ["PrepareCommit", "CompleteCommit"]
    assert h.metadata().state.state_name == "CompleteCommit"
    assert h.init()[2] == epoch + 1


def test_requests_while_loading_or_elsewhere(h):
    h.coordinator.on_resigned(0, 1)
    assert h.init()[0] == ErrorCode.NOT_COORDINATOR
    h.coordinator.on_elected(0, 2)
    assert h.init()[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_the_state_table_refuses_illegal_transitions():
    m = TransactionMetadata("t", 1, -1, 0, -1, 1000, EMPTY)
    with pytest.raises(IllegalTransactionTransition):
        m.prepare_abort_or_commit(PREPARE_COMMIT, 0)                          # Empty -> PrepareCommit
    m.prepare_add_partitions({TP}, 5)
    with pytest.raises(IllegalTransactionTransition):
        m.prepare_add_partitions({TP}, 5)                                    # one pending at a time


# Kafka 2.8's TransactionMetadata.validPreviousStates, written out by name here (not read
# from the code under test), so loosening or tightening any cell of the code's table fails.
KAFKA_VALID_PREVIOUS_STATES = {
    "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
    "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
    "PrepareCommit": {"Ongoing"},
    "PrepareAbort": {"Ongoing", "PrepareEpochFence"},
    "CompleteCommit": {"PrepareCommit"},
    "CompleteAbort": {"PrepareAbort"},
    "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
    "PrepareEpochFence": {"Ongoing"},
}
ALL_STATES = list(TransactionState)


def test_the_table_names_kafkas_eight_states():
    assert sorted(s.state_name for s in ALL_STATES) == sorted(KAFKA_VALID_PREVIOUS_STATES)
    assert [s.value for s in ALL_STATES] == list(range(8))          # the TransactionStatus byte


@pytest.mark.parametrize("to_state", ALL_STATES, ids=str)
@pytest.mark.parametrize("from_state", ALL_STATES, ids=str)
def test_every_transition_of_the_state_table(from_state, to_state):
    """Each of the 64 (from, to) pairs: allowed ones prepare a transit and leave it
    pending; the others raise as Kafka's prepareTransitionTo does (IllegalStateException
    there), with its message, and leave the metadata untouched."""
    m = TransactionMetadata("t", 1, -1, 3, -1, 1000, from_state, {TP}, 100, 200)
    allowed = from_state.state_name in KAFKA_VALID_PREVIOUS_STATES[to_state.state_name]
    if allowed:
        transit = m._prepare(to_state, 1, 3, -1, 1000, frozenset({TP}), 100, 300)
        assert (transit.txn_state, m.pending_state, m.state) == (to_state, to_state, from_state)
        assert (transit.producer_id, transit.last_producer_id, transit.txn_last_update_timestamp) == (1, 1, 300)
    else:
        with pytest.raises(IllegalTransactionTransition) as refused:
            m._prepare(to_state, 1, 3, -1, 1000, frozenset({TP}), 100, 300)
        assert str(refused.value) == (
            f"Preparing transaction state transition to {to_state} failed since the target state {to_state} "
            f"is not a valid previous state of the current state {from_state}")
        assert (m.pending_state, m.state, m.topic_partitions, m.txn_last_update_timestamp) == (
            None, from_state, {TP}, 200)


@pytest.mark.parametrize("from_state", ALL_STATES, ids=str)
def test_the_public_preparations_follow_the_table(from_state):
    """The prepare_* methods the coordinator calls reach the table for their one target state."""
    calls = {
        ONGOING: lambda m: m.prepare_add_partitions({("out", 1)}, 300),
        PREPARE_COMMIT: lambda m: m.prepare_abort_or_commit(PREPARE_COMMIT, 300),
        PREPARE_ABORT: lambda m: m.prepare_abort_or_commit(PREPARE_ABORT, 300),
        PREPARE_EPOCH_FENCE: lambda m: m.prepare_fence_producer_epoch(),
        DEAD: lambda m: m.prepare_dead(),
        EMPTY: lambda m: m.prepare_increment_producer_epoch(1000, None, 300),
    }
    for to_state, call in calls.items():
        m = TransactionMetadata("t", 1, -1, 3, -1, 1000, from_state, {TP}, 100, 200)
        if from_state.state_name in KAFKA_VALID_PREVIOUS_STATES[to_state.state_name]:
            assert call(m).txn_state is to_state and m.pending_state is to_state
        else:
            with pytest.raises(IllegalTransactionTransition):
                call(m)
            assert m.pending_state is None


def _pending(state, to_state, partitions=frozenset({TP})):
    m = TransactionMetadata("t", 1, -1, 3, -1, 1000, state, set(partitions), 100, 200)
    m.pending_state = to_state
    return m


def _transit(to_state, *, producer_id=1, epoch=3, partitions=frozenset({TP}), start=100, timeout=1000):
    from kafkalike.coordinator.transaction.metadata import TxnTransitMetadata
    return TxnTransitMetadata(producer_id, 1, epoch, -1, timeout, to_state, partitions, start, 300)


@pytest.mark.parametrize("case", [
    "no pending state", "another state than the pending one", "Ongoing dropping a partition",
    "Ongoing with another epoch", "Ongoing with another timeout", "PrepareCommit with other partitions",
    "PrepareAbort with another start", "CompleteCommit with another epoch", "CompleteAbort without a start",
    "Empty skipping an epoch", "Empty keeping partitions", "PrepareEpochFence", "Dead"])
def test_completing_a_transition_repeats_kafkas_checks(case):
    """complete_transition_to (Kafka's completeTransitionTo) refuses a transit that does not
    fit the current metadata, and then changes nothing."""
    m, t = {
        "no pending state": (_pending(ONGOING, None), _transit(ONGOING)),
        "another state than the pending one": (_pending(ONGOING, PREPARE_COMMIT), _transit(PREPARE_ABORT)),
        "Ongoing dropping a partition": (_pending(ONGOING, ONGOING, {TP, ("out", 1)}), _transit(ONGOING)),
        "Ongoing with another epoch": (_pending(ONGOING, ONGOING), _transit(ONGOING, epoch=4)),
        "Ongoing with another timeout": (_pending(ONGOING, ONGOING), _transit(ONGOING, timeout=5)),
        "PrepareCommit with other partitions": (_pending(ONGOING, PREPARE_COMMIT),
                                                _transit(PREPARE_COMMIT, partitions=frozenset({("out", 1)}))),
        "PrepareAbort with another start": (_pending(ONGOING, PREPARE_ABORT), _transit(PREPARE_ABORT, start=7)),
        "CompleteCommit with another epoch": (_pending(PREPARE_COMMIT, COMPLETE_COMMIT),
                                              _transit(COMPLETE_COMMIT, epoch=4)),
        "CompleteAbort without a start": (_pending(PREPARE_ABORT, COMPLETE_ABORT), _transit(COMPLETE_ABORT, start=-1)),
        "Empty skipping an epoch": (_pending(COMPLETE_COMMIT, EMPTY, ()),
                                    _transit(EMPTY, epoch=5, partitions=frozenset(), start=-1)),
        "Empty keeping partitions": (_pending(COMPLETE_COMMIT, EMPTY, ()), _transit(EMPTY, epoch=4, start=-1)),
        "PrepareEpochFence": (_pending(ONGOING, PREPARE_EPOCH_FENCE), _transit(PREPARE_EPOCH_FENCE, epoch=4)),
        "Dead": (_pending(EMPTY, DEAD, ()), _transit(DEAD, partitions=frozenset())),
    }[case]
    before = (m.state, m.pending_state, set(m.topic_partitions), m.producer_epoch, m.txn_last_update_timestamp)
    with pytest.raises(IllegalTransactionTransition):
        m.complete_transition_to(t)
    assert (m.state, m.pending_state, set(m.topic_partitions), m.producer_epoch,
            m.txn_last_update_timestamp) == before


@pytest.mark.parametrize("from_state,to_state,transit", [
    (COMPLETE_COMMIT, EMPTY, dict(epoch=4, partitions=frozenset(), start=-1)),       # an epoch bump
    (EMPTY, EMPTY, dict(producer_id=9, epoch=0, partitions=frozenset(), start=-1)),  # a new producer id
    (EMPTY, ONGOING, dict(partitions=frozenset({TP, ("out", 1)}))),
    (ONGOING, PREPARE_COMMIT, {}),
    (PREPARE_COMMIT, COMPLETE_COMMIT, dict(partitions=frozenset())),
    (PREPARE_ABORT, COMPLETE_ABORT, dict(partitions=frozenset())),
], ids=["epoch-bump", "new-producer-id", "add-partitions", "prepare-commit", "complete-commit", "complete-abort"])
def test_a_fitting_transit_completes(from_state, to_state, transit):
    m = _pending(from_state, to_state, () if from_state in (COMPLETE_COMMIT, EMPTY) else {TP})
    t = _transit(to_state, **transit)
    m.complete_transition_to(t)
    assert (m.state, m.pending_state, m.producer_id, m.producer_epoch, m.txn_last_update_timestamp) == (
        to_state, None, t.producer_id, t.producer_epoch, 300)
    assert m.topic_partitions == (set() if to_state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
                                  else set(t.topic_partitions))


def test_records_read_by_kafka_dump_log_decoder(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    part = h.replicas.partitions[(TRANSACTION_STATE_TOPIC, 0)]
    data = part.log.read(0, 1 << 20, max_offset=part.log.log_end_offset)
    record = list(iter_records(data))[-1]
    assert format_transaction_record(record.key, record.value) == (
        f"transaction_metadata::transactionalId={TXN}",
        f"producerId:{pid},producerEpoch:{epoch},state=Ongoing,partitions=[out-0],"
        f"txnLastUpdateTimestamp={h.now()},txnTimeoutMs=60000")


def test_a_repeated_election_at_the_same_epoch_keeps_the_loaded_state(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    h.coordinator.on_elected(0, 0)                                            # LeaderAndIsr told again
    assert h.metadata().state is ONGOING
    assert h.end(pid, epoch) == ErrorCode.NONE


def test_a_fenced_coordinator_stops_sending(h):
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    h.leaders.error = ErrorCode.TRANSACTION_COORDINATOR_FENCED           # a newer coordinator wrote there
    assert h.end(pid, epoch) == ErrorCode.NONE
    h.settle()
    assert len(h.leaders.requests) == 1
    assert h.log_states()[-1] == "PrepareCommit"


def test_lost_connections_are_retried(h):
    refusals = [3]
    connect = h.leaders.connect

    def flaky(host, port):
        if refusals[0]:
            refusals[0] -= 1
            return defer.fail(ConnectionRefusedError("leader restarting"))
        return connect(host, port)
    h.coordinator.markers._connect = flaky
    _e, pid, epoch = h.init()
    h.add(pid, epoch)
    assert h.end(pid, epoch, committed=False) == ErrorCode.NONE
    h.settle()
    assert refusals == [0]
    assert h.leaders.markers() == [(pid, epoch, False, 0, [TP])]
    assert h.log_states()[-1] == "CompleteAbort"
