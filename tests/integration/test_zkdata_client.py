"""KafkaZkClient against a real ZooKeeper server (the shared `zookeeper` fixture).

Each test works in its own chroot (zk_chroot), with its own KafkaZkClients; the
kazoo_client fixture looks at the same chroot from outside, the way zookeeper-shell
would, to check what actually landed in ZooKeeper.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any, Awaitable, Callable

import pytest
import pytest_twisted
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from twisted.internet import reactor, task, threads
from twisted.python import threadable

from kafkalike.zkdata import (
    BrokerChange,
    BrokerRegistration,
    ControllerChange,
    ControllerMovedError,
    EndPoint,
    EphemeralOwnedByOtherSession,
    KafkaZkClient,
    LeaderIsrAndControllerEpoch,
    NewSession,
    PartitionAssignment,
    PartitionModifications,
    SessionExpired,
    TopicAlreadyMarkedForDeletionError,
    TopicChange,
    TopicDeletion,
    TopicExistsError,
    TopicPartition,
    ZNodeChange,
    ZooKeeperClientTimeoutError,
    new_topic_id,
)
from kafkalike.zkdata.client import PARTITIONS_PER_TRANSACTION
from kafkalike.lab.zookeeper import free_ports

pytestmark = pytest.mark.integration

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)


def registration(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", port, "PLAINTEXT"),))


async def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the reactor run until check() holds; the timeout only stops a hung test."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await task.deferLater(reactor, 0.02, lambda: None)


@pytest_twisted.async_yield_fixture
async def open_client(zk_chroot: str) -> Any:
    """open_client(**options) -> a connected KafkaZkClient in this test's chroot; all closed after."""
    opened: list[KafkaZkClient] = []

    async def open_(**options: Any) -> KafkaZkClient:
        client = await KafkaZkClient.connect(zk_chroot, **options)
        opened.append(client)
        await client.create_top_level_paths()
        return client

    yield open_
    for client in opened:
        await client.close()


OpenClient = Callable[..., Awaitable[KafkaZkClient]]


def expire_session(connect: str, client: KafkaZkClient) -> None:
    """Really expire client's session on the server (runs in a thread).

    A second connection presenting the same session id and password takes the session
    over; closing it ends the session for good, and the first client learns on its next
    reconnect that its session expired. If the first client reconnects in between and
    takes the session back, we try again.
    """
    original = client.session_id
    deadline = time.monotonic() + 10
    while client.session_id == original and time.monotonic() < deadline:
        session_id, password = client.session.kazoo.client_id
        thief = KazooClient(hosts=connect, client_id=(session_id, password))
        try:
            thief.start(timeout=5)
            thief.stop()
        finally:
            thief.close()
        time.sleep(0.2)


# -- brokers ---------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_broker_registration_is_kafkas_json_in_an_ephemeral_owned_by_our_session(
    open_client: OpenClient, kazoo_client: KazooClient
) -> None:
    client = await open_client()
    epoch = await client.register_broker(registration(1))
    data, stat = kazoo_client.get("/brokers/ids/1")
    value = json.loads(data)
    assert list(value) == [
        "features", "listener_security_protocol_map", "endpoints", "jmx_port", "port", "host", "version", "timestamp",
    ]
    assert value["endpoints"] == ["PLAINTEXT://127.0.0.1:9092"]
    assert value["version"] == 5 and value["timestamp"].isdigit() and value["features"] == {}
    assert stat.ephemeralOwner == client.session_id
    assert epoch == stat.czxid
    assert (await client.get_broker(1)).endpoints == registration(1).endpoints
    # Kafka's persistent paths exist, as null znodes.
    assert kazoo_client.get("/brokers/ids")[0] is None
    assert set(kazoo_client.get_children("/config")) >= {"topics", "clients", "users", "brokers", "ips", "changes"}


@pytest_twisted.ensureDeferred
async def test_registration_disappears_when_the_session_closes(open_client: OpenClient) -> None:
    broker, observer = await open_client(), await open_client()
    await broker.register_broker(registration(1))
    await observer.register_broker(registration(2, 9093))
    events: list[Any] = []
    await observer.watch_broker_changes(events.append)
    assert [b.id for b in await observer.get_all_brokers()] == [1, 2]
    await broker.close()
    await eventually(lambda: any(isinstance(e, BrokerChange) for e in events))
    assert await observer.get_sorted_broker_ids() == [2]


@pytest_twisted.ensureDeferred
async def test_a_broker_id_held_by_another_session_cannot_be_registered(open_client: OpenClient) -> None:
    first, second = await open_client(), await open_client()
    epoch = await first.register_broker(registration(1))
    with pytest.raises(EphemeralOwnedByOtherSession) as raised:
        await second.register_broker(registration(1, 9093))
    assert isinstance(raised.value, NodeExistsError)
    # Our own session registering again (a retried create) is fine and keeps the epoch.
    assert await first.register_broker(registration(1)) == epoch
    assert [(b.broker.id, b.epoch) for b in await second.get_all_brokers_and_epochs()] == [(1, epoch)]


@pytest_twisted.ensureDeferred
async def test_generated_broker_ids_count_up_from_reserved_max(open_client: OpenClient) -> None:
    client = await open_client()
    assert [await client.generate_broker_id(), await client.generate_broker_id()] == [1001, 1002]


@pytest_twisted.ensureDeferred
async def test_every_broker_sees_the_same_cluster_id(open_client: OpenClient, kazoo_client: KazooClient) -> None:
    first, second = await open_client(), await open_client()
    cluster_id = await first.get_or_create_cluster_id()
    assert await second.get_or_create_cluster_id() == cluster_id
    assert kazoo_client.get("/cluster/id")[0] == b'{"version":"1","id":"%s"}' % cluster_id.encode()


# -- controller --------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_controller_election_has_one_winner_and_bumps_the_epoch_each_time(
    open_client: OpenClient, kazoo_client: KazooClient
) -> None:
    one, two = await open_client(), await open_client()
    race = [one.register_controller_and_increment_epoch(1), two.register_controller_and_increment_epoch(2)]
    outcomes = []
    for attempt in race:
        try:
            outcomes.append(await attempt)
        except ControllerMovedError as error:
            outcomes.append(error)
    winners = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(winners) == 1 and winners[0][0] == 1
    winner_id = 1 if outcomes[0] is winners[0] else 2
    assert await one.get_controller_id() == winner_id
    assert kazoo_client.get("/controller_epoch")[0] == b"1"
    assert json.loads(kazoo_client.get("/controller")[0])["brokerid"] == winner_id

    loser = two if winner_id == 1 else one
    loser_id = 3 - winner_id
    changes: list[Any] = []
    await loser.watch_controller(changes.append)
    await (one if winner_id == 1 else two).close()
    await eventually(lambda: any(e.change == ZNodeChange.DELETED for e in changes))
    assert all(isinstance(e, ControllerChange) for e in changes)
    assert await loser.get_controller_id() is None
    epoch, epoch_zk_version = await loser.register_controller_and_increment_epoch(loser_id)
    assert (epoch, epoch_zk_version) == (2, 2)
    assert kazoo_client.get("/controller_epoch")[0] == b"2"


@pytest_twisted.ensureDeferred
async def test_a_deposed_controller_cannot_write(open_client: OpenClient) -> None:
    old, new = await open_client(), await open_client()
    await old.create_topic_assignment("orders", PartitionAssignment.of({0: [1, 2], 1: [2, 1]}))
    _, old_version = await old.register_controller_and_increment_epoch(1)
    state = LeaderIsrAndControllerEpoch(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=1)
    created = await old.create_partition_states({T0: state}, old_version)
    assert created == {T0: state}

    await old.delete_controller(old_version)  # resigns; broker 2 takes over
    new_epoch, _ = await new.register_controller_and_increment_epoch(2)
    assert new_epoch == 2
    stale = LeaderIsrAndControllerEpoch(leader=2, leader_epoch=1, isr=(2,), controller_epoch=1, zk_version=0)
    with pytest.raises(ControllerMovedError):
        await old.set_partition_states({T0: stale}, old_version)
    with pytest.raises(ControllerMovedError):
        await old.create_partition_states({T1: state}, old_version)
    assert await new.get_partition_states([T0, T1]) == {T0: state}


@pytest_twisted.ensureDeferred
async def test_partition_state_writes_are_conditional_on_the_zk_version(
    open_client: OpenClient, kazoo_client: KazooClient
) -> None:
    client = await open_client()
    _, epoch_version = await client.register_controller_and_increment_epoch(1)
    initial = {tp: LeaderIsrAndControllerEpoch(1, 0, (1, 2), 1) for tp in (T0, T1)}
    no_topic = await client.create_partition_states(initial, epoch_version)
    assert all(isinstance(outcome, NoNodeError) for outcome in no_topic.values())
    await client.create_topic_assignment("orders", PartitionAssignment.of({0: [1, 2], 1: [2, 1]}))
    assert await client.create_partition_states(initial, epoch_version) == initial
    again = await client.create_partition_states({T0: initial[T0]}, epoch_version)
    assert isinstance(again[T0], NodeExistsError)
    assert kazoo_client.get("/brokers/topics/orders/partitions/0")[0] is None
    assert kazoo_client.get("/brokers/topics/orders/partitions/0/state")[0] == (
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    )

    shrunk = LeaderIsrAndControllerEpoch(1, 0, (1,), 1, zk_version=0)
    written = await client.set_partition_states({T0: shrunk}, epoch_version)
    assert written == {T0: LeaderIsrAndControllerEpoch(1, 0, (1,), 1, zk_version=1)}
    # A writer that still holds zkVersion 0 loses; the other partition's write lands.
    racing = {T0: LeaderIsrAndControllerEpoch(2, 1, (2,), 1, zk_version=0), T1: shrunk}
    outcome = await client.set_partition_states(racing)
    assert isinstance(outcome[T0], BadVersionError)
    assert outcome[T1] == LeaderIsrAndControllerEpoch(1, 0, (1,), 1, zk_version=1)
    assert await client.get_partition_states([T0]) == {T0: written[T0]}


# -- topics ------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_topic_creation_writes_config_then_assignment_and_refuses_duplicates(
    open_client: OpenClient, kazoo_client: KazooClient
) -> None:
    client = await open_client()
    assignment = PartitionAssignment.of({0: [1, 2], 1: [2, 1]}, new_topic_id())
    await client.create_topic_assignment("orders", assignment, {"cleanup.policy": "compact"})
    assert kazoo_client.get("/config/topics/orders")[0] == b'{"version":1,"config":{"cleanup.policy":"compact"}}'
    assert await client.get_topic_assignments(["orders", "missing"]) == {"orders": assignment}
    assert await client.get_all_topics() == ["orders"]
    with pytest.raises(TopicExistsError):
        await client.create_topic_assignment("orders", assignment, {"cleanup.policy": "delete"})
    assert await client.get_topic_configs(["orders"]) == {"orders": {"cleanup.policy": "compact"}}

    await client.change_topic_config("orders", {"retention.ms": "1000"})
    [change] = kazoo_client.get_children("/config/changes")
    assert change.startswith("config_change_") and len(change) == len("config_change_") + 10
    assert kazoo_client.get(f"/config/changes/{change}")[0] == b'{"version":2,"entity_path":"topics/orders"}'


@pytest_twisted.ensureDeferred
async def test_topic_deletion_request_and_recursive_delete(open_client: OpenClient, kazoo_client: KazooClient) -> None:
    client = await open_client()
    await client.create_topic_assignment("orders", PartitionAssignment.of({0: [1], 1: [1]}))
    await client.create_partition_states({tp: LeaderIsrAndControllerEpoch(1, 0, (1,), 1) for tp in (T0, T1)})
    await client.mark_topic_for_deletion("orders")
    with pytest.raises(TopicAlreadyMarkedForDeletionError):
        await client.mark_topic_for_deletion("orders")
    assert await client.get_topic_deletions() == ["orders"]

    _, epoch_version = await client.register_controller_and_increment_epoch(1)
    await client.delete_topic_znode("orders", epoch_version)
    await client.delete_topic_configs(["orders"], epoch_version)
    await client.delete_topic_deletions(["orders"], epoch_version)
    assert kazoo_client.exists("/brokers/topics/orders") is None
    assert kazoo_client.exists("/config/topics/orders") is None
    assert await client.get_topic_deletions() == []


@pytest_twisted.ensureDeferred
async def test_isr_change_notifications_round_trip(open_client: OpenClient) -> None:
    leader, controller = await open_client(), await open_client()
    await leader.propagate_isr_changes([T0])
    await leader.propagate_isr_changes([T1, T0])
    sequence_numbers = await controller.get_all_isr_change_notifications()
    assert len(sequence_numbers) == 2 and sequence_numbers == sorted(sequence_numbers)
    assert await controller.get_partitions_from_isr_change_notifications(sequence_numbers) == [T0, T1]
    await controller.delete_isr_change_notifications(sequence_numbers, -1)
    assert await controller.get_all_isr_change_notifications() == []


@pytest_twisted.ensureDeferred
async def test_legacy_znodes_config_entities_elections_and_v0_offsets(
        open_client: OpenClient, kazoo_client: KazooClient) -> None:
    client = await open_client()
    assert await client.get_entity_names("users") == []
    await client.change_entity_config("users", "bob", {"producer_byte_rate": "10"})
    await client.change_entity_config("users", "alice", {"consumer_byte_rate": "20"})
    assert await client.get_entity_names("users") == ["alice", "bob"]

    assert await client.get_preferred_replica_election() is None
    kazoo_client.create("/admin/preferred_replica_election", json.dumps(
        {"version": 1, "partitions": [{"topic": "orders", "partition": 1}, {"topic": "orders", "partition": 0},
                                      {"topic": "orders", "partition": 1}]}).encode(), makepath=True)
    assert await client.get_preferred_replica_election() == [T1, T0]
    await client.delete_preferred_replica_election(-1)
    assert kazoo_client.exists("/admin/preferred_replica_election") is None

    assert await client.get_consumer_offset("old-group", T0) is None
    await client.set_consumer_offset("old-group", T0, 42)
    await client.set_consumer_offset("old-group", T0, 43)
    assert kazoo_client.get("/consumers/old-group/offsets/orders/0")[0] == b"43"  # as the Scala consumer wrote it
    assert await client.get_consumer_offset("old-group", T0) == 43


# -- watches and sessions ------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_watches_deliver_typed_events_on_the_reactor_thread(open_client: OpenClient) -> None:
    controller, admin = await open_client(), await open_client()
    seen: list[tuple[Any, bool]] = []

    def record(event: Any) -> None:
        on_reactor = threadable.isInIOThread() and threading.current_thread() is threading.main_thread()
        seen.append((event, on_reactor))

    await controller.watch_topic_changes(record)
    await controller.watch_topic_deletions(record)
    await controller.watch_partition_modifications("orders", record)  # before the topic exists
    await admin.create_topic_assignment("orders", PartitionAssignment.of({0: [1]}))
    await eventually(lambda: {type(e) for e, _ in seen} >= {TopicChange, PartitionModifications})
    await admin.set_topic_assignment("orders", PartitionAssignment.of({0: [1], 1: [1]}))
    await eventually(lambda: sum(isinstance(e, PartitionModifications) for e, _ in seen) == 2)
    await admin.mark_topic_for_deletion("orders")
    await eventually(lambda: any(isinstance(e, TopicDeletion) for e, _ in seen))

    assert all(on_reactor for _, on_reactor in seen)
    modifications = [e for e, _ in seen if isinstance(e, PartitionModifications)]
    assert [(e.topic, e.change) for e in modifications] == [
        ("orders", ZNodeChange.CREATED), ("orders", ZNodeChange.DATA_CHANGED),
    ]


@pytest_twisted.ensureDeferred
async def test_session_expiry_tells_the_broker_to_register_again(
    open_client: OpenClient, zookeeper: Any, zk_chroot: str, kazoo_client: KazooClient
) -> None:
    broker, controller = await open_client(), await open_client()
    old_session = broker.session_id
    old_epoch = await broker.register_broker(registration(1))
    session_events: list[Any] = []
    broker_changes: list[Any] = []
    epochs: list[int] = []

    def on_session(event: Any) -> None:
        session_events.append(event)
        if isinstance(event, NewSession):
            broker.register_broker(registration(1)).addCallback(epochs.append)

    broker.add_session_listener(on_session)
    await controller.watch_broker_changes(broker_changes.append)
    await threads.deferToThread(expire_session, zookeeper.connect_string, broker)
    await eventually(lambda: bool(epochs))

    assert any(isinstance(e, SessionExpired) and e.session_id == old_session for e in session_events)
    assert broker.session_id != old_session
    data, stat = kazoo_client.get("/brokers/ids/1")
    assert stat.ephemeralOwner == broker.session_id and stat.czxid == epochs[0] > old_epoch
    await eventually(lambda: len(broker_changes) >= 1)
    assert await controller.get_sorted_broker_ids() == [1]


@pytest_twisted.ensureDeferred
async def test_watches_survive_a_session_expiry(open_client: OpenClient, zookeeper: Any) -> None:
    client, admin = await open_client(), await open_client()
    events: list[Any] = []
    await client.watch_topic_changes(events.append)
    await threads.deferToThread(expire_session, zookeeper.connect_string, client)
    await eventually(lambda: any(e.change == ZNodeChange.RESYNC for e in events))
    await admin.create_topic_assignment("late", PartitionAssignment.of({0: [1]}))
    await eventually(lambda: any(e.change == ZNodeChange.CHILDREN_CHANGED for e in events))


@pytest_twisted.ensureDeferred
async def test_chroot_is_created_and_confines_everything(zookeeper: Any) -> None:
    root = f"/zkdata-{uuid.uuid4().hex[:8]}"
    client = await KafkaZkClient.connect(f"{zookeeper.connect_string}{root}/kafka")
    try:
        await client.create_top_level_paths()
        await client.register_broker(registration(4))
        outside = KazooClient(hosts=zookeeper.connect_string)
        await threads.deferToThread(outside.start, 15)
        try:
            assert outside.get(f"{root}/kafka")[0] is None  # made by us, null like Kafka's
            assert outside.get_children(f"{root}/kafka/brokers/ids") == ["4"]
            assert outside.exists("/brokers/ids/4") is None
        finally:
            await threads.deferToThread(outside.delete, root, recursive=True)
            await threads.deferToThread(outside.stop)
            outside.close()
    finally:
        await client.close()


@pytest_twisted.ensureDeferred
async def test_connection_timeout_when_no_server_listens() -> None:
    port = free_ports(1)[0]
    started = time.monotonic()
    with pytest.raises(ZooKeeperClientTimeoutError):
        await KafkaZkClient.connect(f"127.0.0.1:{port}", connection_timeout_ms=500)
    assert time.monotonic() - started < 10


@pytest_twisted.ensureDeferred
async def test_many_new_partitions_are_created_in_transactions_and_a_clash_fails_only_its_partition(
    open_client: OpenClient, kazoo_client: KazooClient
) -> None:
    client = await open_client()
    _, epoch_version = await client.register_controller_and_increment_epoch(1)
    count = 2 * PARTITIONS_PER_TRANSACTION + 50           # two full transactions and a partial one
    await client.create_topic_assignment("wide", PartitionAssignment.of({p: [1] for p in range(count)}))
    # One partition already has a state (a controller that died mid-creation wrote it).
    kazoo_client.create("/brokers/topics/wide/partitions/7/state", b"{}", makepath=True)
    state = LeaderIsrAndControllerEpoch(1, 0, (1,), 1)
    wanted = {TopicPartition("wide", p): state for p in range(count)}
    outcomes = await client.create_partition_states(wanted, epoch_version)
    assert isinstance(outcomes.pop(TopicPartition("wide", 7)), NodeExistsError)
    assert outcomes == {tp: state for tp in wanted if tp.partition != 7}
    assert sorted(map(int, kazoo_client.get_children("/brokers/topics/wide/partitions"))) == list(range(count))
    assert kazoo_client.get(f"/brokers/topics/wide/partitions/{count - 1}/state")[0] == (
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}')
    assert await client.get_partition_states([TopicPartition("wide", count - 1)]) == {
        TopicPartition("wide", count - 1): state}

    def zxids(partitions: range) -> set[int]:
        return {kazoo_client.exists(f"/brokers/topics/wide/partitions/{p}/state").czxid for p in partitions}
    # The clash's chunk was written znode by znode; the next one in one transaction (one zxid).
    assert len(zxids(range(8, PARTITIONS_PER_TRANSACTION))) == PARTITIONS_PER_TRANSACTION - 8
    assert len(zxids(range(PARTITIONS_PER_TRANSACTION, 2 * PARTITIONS_PER_TRANSACTION))) == 1
