"""KafkaZkClient: every ZooKeeper read and write a broker or controller makes, by meaning.

This is the one facade over the znode catalogue (Kafka's KafkaZkClient over ZkData):
callers say "register this broker" or "write these partition states under my controller
epoch", and get Deferreds that fire on the reactor thread. The plumbing (threads,
reconnects, watches) is in session.py and watches.py.

Fencing works as in Kafka. A controller passes the data version of /controller_epoch
it saw when it won the election; every write it makes then travels in one ZooKeeper
transaction with a check of that version, so once another broker wins an election
(which bumps /controller_epoch) the deposed controller's writes fail with
ControllerMovedError instead of landing. Partition states are also written at the
state znode's own version (zkVersion), so two writers cannot overwrite each other.
Pass MATCH_ANY_VERSION (-1) as controller_epoch_zk_version for unfenced writes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.protocol.serialization import Create
from kazoo.protocol.states import ZnodeStat

from twisted.internet.defer import Deferred

from .bridge import gather, returns_deferred, settle_all
from .broker_registration import BROKER_IDS_PATH, BrokerIdZNode, BrokerRegistration
from .errors import (
    ControllerMovedError,
    EphemeralOwnedByOtherSession,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
)
from .events import (
    BrokerChange,
    ChildrenChanged,
    ConfigChangeNotification,
    ControllerChange,
    DataChanged,
    IsrChangeNotification,
    PartitionModifications,
    SessionEvent,
    TopicChange,
    TopicDeletion,
    ZNodeEvent,
)
from .ids import generate_cluster_id
from .security import NO_SECURITY, ZkSecurity
from .session import DEFAULT_SESSION_TIMEOUT_MS, ZooKeeperSession
from .topic_znodes import (
    TOPICS_PATH,
    INITIAL_ZK_VERSION,
    LeaderIsrAndControllerEpoch,
    PartitionAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicPartitionZNode,
    TopicPartitionsZNode,
    TopicZNode,
)
from .watches import ZNodeWatch
from .znodes import (
    INITIAL_CONTROLLER_EPOCH,
    INITIAL_CONTROLLER_EPOCH_ZK_VERSION,
    MATCH_ANY_VERSION,
    PERSISTENT_ZK_PATHS,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityName,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ConfigType,
    ConsumerOffset,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    FeatureZNodeValue,
    IsrChangeNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    now_ms,
)

# New partitions' znodes written per ZooKeeper transaction: at most about 1.1 KB each (two
# creates, a 249-character topic name, the state JSON, ACLs), so a transaction stays far
# below ZooKeeper's default jute.maxbuffer of 1 MB.
PARTITIONS_PER_TRANSACTION = 200
RESERVED_BROKER_MAX_ID = 1000  # reserved.broker.max.id: generated ids start above it

Listener = Callable[[ZNodeEvent], object]


@dataclass(frozen=True)
class ZkOp:
    """One write (or version check), so the same write can run alone or in a fenced transaction."""

    kind: str  # "create", "set", "delete" or "check"
    path: str
    data: bytes | None = None
    version: int = MATCH_ANY_VERSION
    ephemeral: bool = False
    sequence: bool = False

    @classmethod
    def create(cls, path: str, data: bytes | None, *, ephemeral: bool = False, sequence: bool = False) -> ZkOp:
        return cls("create", path, data, ephemeral=ephemeral, sequence=sequence)

    @classmethod
    def set(cls, path: str, data: bytes, version: int = MATCH_ANY_VERSION) -> ZkOp:
        return cls("set", path, data, version)

    @classmethod
    def delete(cls, path: str, version: int = MATCH_ANY_VERSION) -> ZkOp:
        return cls("delete", path, version=version)

    @classmethod
    def check(cls, path: str, version: int) -> ZkOp:
        return cls("check", path, version=version)


@dataclass(frozen=True)
class BrokerAndEpoch:
    """A registered broker and its broker epoch (the czxid of its /brokers/ids znode)."""

    broker: BrokerRegistration
    epoch: int


class KafkaZkClient:
    """Kafka's view of ZooKeeper. Every public method returns a Deferred."""

    def __init__(self, session: ZooKeeperSession) -> None:
        self.session = session

    @classmethod
    @returns_deferred
    async def connect(
        cls,
        zookeeper_connect: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
        reactor: Any = None,
        security: ZkSecurity = NO_SECURITY,
    ) -> KafkaZkClient:
        """Connect to zookeeper.connect (creating its chroot if missing) and return the client;
        `security` is the SASL login and the ACLs of the znodes it creates."""
        session = ZooKeeperSession(
            zookeeper_connect,
            session_timeout_ms=session_timeout_ms,
            connection_timeout_ms=connection_timeout_ms,
            reactor=reactor,
            security=security,
        )
        await session.start()
        return cls(session)

    def close(self) -> Deferred[None]:
        return self.session.close()

    @property
    def session_id(self) -> int | None:
        return self.session.session_id

    def add_session_listener(self, listener: Callable[[SessionEvent], object]) -> None:
        """listener(SessionEvent) on the reactor; on NewSession, register the broker again."""
        self.session.add_session_listener(listener)

    def remove_session_listener(self, listener: Callable[[SessionEvent], object]) -> None:
        self.session.remove_session_listener(listener)

    # -- cluster ---------------------------------------------------------------------

    @returns_deferred
    async def create_top_level_paths(self) -> None:
        """The persistent znodes every broker makes sure of at startup (ZkData.PersistentZkPaths)."""
        await self._for_each(lambda path: self._create_recursive(path, None, must_be_new=False), PERSISTENT_ZK_PATHS)

    @returns_deferred
    async def get_cluster_id(self) -> str | None:
        found = await self._get_or_none(ClusterIdZNode.PATH)
        return ClusterIdZNode.decode(found[0]) if found else None

    @returns_deferred
    async def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        """The cluster id; the first broker to ask writes a new one (or proposed)."""
        existing = await self.get_cluster_id()
        if existing is not None:
            return existing
        candidate = proposed or generate_cluster_id()
        try:
            await self._create_recursive(ClusterIdZNode.PATH, ClusterIdZNode.encode(candidate))
            return candidate
        except NodeExistsError:
            return ClusterIdZNode.decode((await self._get(ClusterIdZNode.PATH))[0])

    # -- features --------------------------------------------------------------------

    @returns_deferred
    async def get_feature_znode(self) -> tuple[FeatureZNodeValue | None, int]:
        """/feature's value and data version (None, -1 when it does not exist)."""
        found = await self._get_or_none(FeatureZNode.PATH)
        if found is None:
            return None, MATCH_ANY_VERSION
        return FeatureZNode.decode(found[0]), found[1].version

    @returns_deferred
    async def create_or_set_feature_znode(self, value: FeatureZNodeValue, exists: bool) -> None:
        """Write /feature: create it, or overwrite it when `exists` (the controller's choice)."""
        if exists:
            await self._write(ZkOp.set(FeatureZNode.PATH, FeatureZNode.encode(value)), MATCH_ANY_VERSION)
        else:
            await self._create_recursive(FeatureZNode.PATH, FeatureZNode.encode(value))

    # -- producer ids ----------------------------------------------------------------

    @returns_deferred
    async def get_producer_id_block(self) -> tuple[ProducerIdBlock | None, int]:
        """The latest claimed block and the znode's data version (-1: no znode at all)."""
        found = await self._get_or_none(ProducerIdBlockZNode.PATH)
        if found is None:
            return None, MATCH_ANY_VERSION
        return ProducerIdBlockZNode.decode(found[0]), found[1].version

    @returns_deferred
    async def conditional_set_producer_id_block(self, block: ProducerIdBlock, expected_version: int) -> bool:
        """Claim `block` if nobody wrote since we read version `expected_version`.

        False means another broker won the race (BADVERSION, or the znode appeared):
        the caller re-reads and tries the next block, as Kafka's ProducerIdManager does.
        """
        data = ProducerIdBlockZNode.encode(block)
        try:
            if expected_version < 0:
                await self._create_recursive(ProducerIdBlockZNode.PATH, data)
            else:
                await self._req(lambda: self._kazoo.set_async(ProducerIdBlockZNode.PATH, data, expected_version))
        except (BadVersionError, NodeExistsError, NoNodeError):
            return False
        return True

    # -- brokers ---------------------------------------------------------------------

    @returns_deferred
    async def generate_broker_sequence_id(self) -> int:
        """Bump /brokers/seqid with an unconditional write; its new data version is the id."""
        path = BrokerSequenceIdZNode.PATH
        try:
            stat = await self._req(lambda: self._kazoo.set_async(path, b"", MATCH_ANY_VERSION))
        except NoNodeError:
            await self._create_recursive(path, None, must_be_new=False)
            stat = await self._req(lambda: self._kazoo.set_async(path, b"", MATCH_ANY_VERSION))
        return stat.version

    @returns_deferred
    async def generate_broker_id(self, reserved_broker_max_id: int = RESERVED_BROKER_MAX_ID) -> int:
        """A broker id for broker.id.generation.enable: sequence number + reserved.broker.max.id."""
        return await self.generate_broker_sequence_id() + reserved_broker_max_id

    @returns_deferred
    async def register_broker(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral /brokers/ids/<id> and return the broker epoch (its czxid).

        A "checked" ephemeral create: if the znode exists but our own session owns it (a
        retried create that had in fact succeeded), that is success; if another session
        owns it, EphemeralOwnedByOtherSession.
        """
        path = registration.path
        data = BrokerIdZNode.encode(registration)
        while True:
            try:
                _, stat = await self._req(
                    lambda: self._kazoo.create_async(path, data, acl=self._acls(path), ephemeral=True,
                                                     include_data=True)
                )
                return stat.czxid
            except NodeExistsError:
                found = await self._get_or_none(path)
            if found is None:
                continue  # the old owner's session ended just now: create again
            stat = found[1]
            if stat.ephemeralOwner == self.session_id:
                return stat.czxid
            raise EphemeralOwnedByOtherSession(
                f"Error while creating ephemeral at {path}, node already exists and owner "
                f"'{stat.ephemeralOwner:#x}' does not match current session '{(self.session_id or 0):#x}'"
            )

    @returns_deferred
    async def update_broker_info(self, registration: BrokerRegistration) -> None:
        """Rewrite our registration in place (new endpoints after a dynamic config change)."""
        await self._req(lambda: self._kazoo.set_async(registration.path, BrokerIdZNode.encode(registration), -1))

    @returns_deferred
    async def get_sorted_broker_ids(self) -> list[int]:
        return sorted(int(child) for child in await self._children(BROKER_IDS_PATH))

    @returns_deferred
    async def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        found = await self._get_or_none(BrokerIdZNode.path(broker_id))
        return BrokerIdZNode.decode(broker_id, found[0]) if found else None

    @returns_deferred
    async def get_all_brokers_and_epochs(self) -> list[BrokerAndEpoch]:
        """Every live broker with its epoch, by id; brokers that vanish meanwhile are left out."""
        ids = await self.get_sorted_broker_ids()
        reads = await self._for_each(lambda i: self._get_or_none(BrokerIdZNode.path(i)), ids)
        return [
            BrokerAndEpoch(BrokerIdZNode.decode(broker_id, found[0]), found[1].czxid)
            for broker_id, found in zip(ids, reads)
            if found is not None
        ]

    @returns_deferred
    async def get_all_brokers(self) -> list[BrokerRegistration]:
        return [entry.broker for entry in await self.get_all_brokers_and_epochs()]

    # -- controller ------------------------------------------------------------------

    @returns_deferred
    async def get_controller_id(self) -> int | None:
        found = await self._get_or_none(ControllerZNode.PATH)
        return ControllerZNode.decode(found[0]) if found else None

    @returns_deferred
    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, data version of /controller_epoch), or None before the first election."""
        found = await self._get_or_none(ControllerEpochZNode.PATH)
        return (ControllerEpochZNode.decode(found[0]), found[1].version) if found else None

    @returns_deferred
    async def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Try to become controller: returns (new epoch, its zk version) or raises ControllerMovedError.

        One transaction creates the ephemeral /controller and writes epoch + 1 to
        /controller_epoch at the version we read, so two brokers can never both win,
        and every win bumps the epoch exactly once.
        """
        current = await self.get_controller_epoch() or await self._create_controller_epoch_znode()
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        ops = [
            ZkOp.create(ControllerZNode.PATH, ControllerZNode.encode(broker_id, now_ms()), ephemeral=True),
            ZkOp.set(ControllerEpochZNode.PATH, ControllerEpochZNode.encode(new_epoch), epoch_zk_version),
        ]
        results = await self._req(lambda: self._transaction(ops).commit_async())
        failure = _first_failure(results)
        if failure is None:
            return new_epoch, results[1].version
        if isinstance(failure, (NodeExistsError, BadVersionError)):
            # Lost, or a retry of a transaction that had in fact committed: look.
            if await self.get_controller_id() == broker_id:
                found = await self.get_controller_epoch()
                if found is not None and found[0] == new_epoch:
                    return found
            raise ControllerMovedError(f"broker {broker_id} lost the controller election for epoch {new_epoch}")
        raise failure

    async def _create_controller_epoch_znode(self) -> tuple[int, int]:
        try:
            await self._create(ControllerEpochZNode.PATH, ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH))
            return INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        except NodeExistsError:
            found = await self.get_controller_epoch()
            if found is None:
                raise
            return found

    @returns_deferred
    async def delete_controller(self, controller_epoch_zk_version: int) -> None:
        """Resign: delete /controller, fenced like any other controller write."""
        try:
            await self._write(ZkOp.delete(ControllerZNode.PATH), controller_epoch_zk_version)
        except NoNodeError:
            pass

    # -- topics ----------------------------------------------------------------------

    @returns_deferred
    async def topic_exists(self, topic: str) -> bool:
        return await self._req(lambda: self._kazoo.exists_async(TopicZNode.path(topic))) is not None

    @returns_deferred
    async def get_all_topics(self) -> list[str]:
        return sorted(await self._children(TOPICS_PATH))

    @returns_deferred
    async def create_topic_assignment(
        self, topic: str, assignment: PartitionAssignment, configs: Mapping[str, str] | None = None
    ) -> None:
        """Create a topic as Kafka's admin path does: config znode first, then the assignment.

        The controller notices the new /brokers/topics child and does the rest. The
        topic id is the caller's choice (ids.new_topic_id(); None writes no topic_id).
        """
        if await self.topic_exists(topic):
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        await self.set_or_create_entity_configs(ConfigType.TOPIC, topic, configs or {})
        try:
            await self._create_recursive(TopicZNode.path(topic), TopicZNode.encode(assignment))
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None

    @returns_deferred
    async def set_topic_assignment(
        self, topic: str, assignment: PartitionAssignment, controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        """Rewrite /brokers/topics/<topic> (partitions added, reassignment progress)."""
        await self._write(ZkOp.set(TopicZNode.path(topic), TopicZNode.encode(assignment)), controller_epoch_zk_version)

    @returns_deferred
    async def get_topic_assignments(self, topics: Iterable[str]) -> dict[str, PartitionAssignment]:
        """Assignments of the topics that exist; absent topics are left out."""
        names = list(topics)
        reads = await self._for_each(lambda t: self._get_or_none(TopicZNode.path(t)), names)
        return {t: TopicZNode.decode(t, found[0]) for t, found in zip(names, reads) if found is not None}

    # -- partition states ------------------------------------------------------------

    @returns_deferred
    async def create_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """Create the state znodes of new partitions (and their null parents).

        Per partition: the state as written (zk_version 0), or the error, e.g.
        NodeExistsError, or NoNodeError when the topic has no znode. ControllerMovedError
        fails the whole call.
        """
        partitions = list(states)
        # Parents first. Like Kafka we ignore their outcome (bar fencing): a topic
        # without its znode shows up below as NoNodeError for each of its partitions.
        def create_parent(path: str) -> Any:
            return self._create_if_missing(path, controller_epoch_zk_version)

        def create_state(tp: TopicPartition) -> Any:
            op = ZkOp.create(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(states[tp]))
            return self._write(op, controller_epoch_zk_version)

        async def create_one_by_one(chunk: list[TopicPartition]) -> list[Any]:
            _raise_if_fenced(await self._settle_each(create_parent, [TopicPartitionZNode.path(tp) for tp in chunk]))
            outcomes = await self._settle_each(create_state, chunk)
            _raise_if_fenced(outcomes)
            return outcomes

        async def create_chunk(chunk: list[TopicPartition]) -> list[Any]:
            # A new topic's partitions: each chunk's parents and states in one transaction
            # (one ZooKeeper round trip and log write instead of two per partition). If any
            # of them fails (a znode already there, a topic deleted meanwhile), nothing of
            # it was written, and the chunk is done one znode at a time as Kafka does it,
            # which gives each partition its own outcome.
            ops = [ZkOp.check(ControllerEpochZNode.PATH, controller_epoch_zk_version)] \
                if controller_epoch_zk_version >= 0 else []
            for tp in chunk:
                ops.append(ZkOp.create(TopicPartitionZNode.path(tp), None))
                ops.append(ZkOp.create(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(states[tp])))
            results = await self._req(lambda: self._transaction(ops).commit_async())
            if ops[0].kind == "check" and isinstance(results[0], BadVersionError):
                raise ControllerMovedError(
                    f"controller epoch zk version check failed: expected {controller_epoch_zk_version}")
            if not any(isinstance(r, Exception) for r in results):
                return [None] * len(chunk)
            return await create_one_by_one(chunk)

        topics = sorted({TopicPartitionsZNode.path(tp.topic) for tp in partitions})
        _raise_if_fenced(await self._settle_each(create_parent, topics))
        chunks = [partitions[i:i + PARTITIONS_PER_TRANSACTION]
                  for i in range(0, len(partitions), PARTITIONS_PER_TRANSACTION)]
        outcomes = [o for chunk in await gather([Deferred.fromCoroutine(create_chunk(c)) for c in chunks])
                    for o in chunk]
        return {
            tp: outcome if isinstance(outcome, Exception) else _with_zk_version(states[tp], INITIAL_ZK_VERSION)
            for tp, outcome in zip(partitions, outcomes)
        }

    @returns_deferred
    async def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Current states, each with the zk_version to quote when updating it; absent ones left out.

        Each topic's partition znodes are listed first (one request per topic), so a new
        topic's partitions, which have no state yet, cost no read each."""
        wanted = list(partitions)
        topics = sorted({tp.topic for tp in wanted})
        listed = await self._for_each(lambda t: self._children(TopicPartitionsZNode.path(t)), topics)
        present = {(t, child) for t, children in zip(topics, listed) for child in children}
        wanted = [tp for tp in wanted if (tp.topic, str(tp.partition)) in present]
        reads = await self._for_each(lambda tp: self._get_or_none(TopicPartitionStateZNode.path(tp)), wanted)
        return {
            tp: TopicPartitionStateZNode.decode(found[0], found[1].version)
            for tp, found in zip(wanted, reads)
            if found is not None
        }

    @returns_deferred
    async def set_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """Conditional writes: each state lands only if its znode is still at state.zk_version.

        Per partition: the state with its new zk_version, or the error (BadVersionError
        when someone wrote in between, NoNodeError). ControllerMovedError fails the call.
        """
        def write_state(tp: TopicPartition) -> Any:
            state = states[tp]
            op = ZkOp.set(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(state), state.zk_version)
            return self._write(op, controller_epoch_zk_version)

        partitions = list(states)
        outcomes = await self._settle_each(write_state, partitions)
        _raise_if_fenced(outcomes)
        return {
            tp: outcome if isinstance(outcome, Exception) else _with_zk_version(states[tp], outcome.version)
            for tp, outcome in zip(partitions, outcomes)
        }

    # -- the legacy preferred-replica election and OffsetCommit v0 offsets ----------------

    @returns_deferred
    async def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        """The partitions asked for, None when no election is pending; ZNodeDecodeError if unreadable."""
        found = await self._get_or_none(PreferredReplicaElectionZNode.PATH)
        return None if found is None else PreferredReplicaElectionZNode.decode(found[0])

    @returns_deferred
    async def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> None:
        await self._delete_if_present(PreferredReplicaElectionZNode.PATH, controller_epoch_zk_version)

    # -- the legacy partition reassignment znode ---------------------------------------

    @returns_deferred
    async def reassign_partitions_in_progress(self) -> bool:
        return await self._req(lambda: self._kazoo.exists_async(ReassignPartitionsZNode.PATH)) is not None

    @returns_deferred
    async def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        """Partition -> target replicas from /admin/reassign_partitions; None when there is
        no such znode; ZNodeDecodeError when it is unreadable."""
        found = await self._get_or_none(ReassignPartitionsZNode.PATH)
        return None if found is None else ReassignPartitionsZNode.decode(found[0])

    @returns_deferred
    async def create_partition_reassignment(self, reassignments: Mapping[TopicPartition, Sequence[int]]) -> None:
        """What `kafka-reassign-partitions --zookeeper --execute` writes (NodeExistsError if
        one is there already)."""
        await self._create_recursive(ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode(reassignments))

    @returns_deferred
    async def set_or_create_partition_reassignment(
        self, reassignments: Mapping[TopicPartition, Sequence[int]], controller_epoch_zk_version: int
    ) -> None:
        data = ReassignPartitionsZNode.encode(reassignments)
        try:
            await self._write(ZkOp.set(ReassignPartitionsZNode.PATH, data), controller_epoch_zk_version)
        except NoNodeError:
            await self._write(ZkOp.create(ReassignPartitionsZNode.PATH, data), controller_epoch_zk_version)

    @returns_deferred
    async def delete_partition_reassignment(self, controller_epoch_zk_version: int) -> None:
        await self._delete_if_present(ReassignPartitionsZNode.PATH, controller_epoch_zk_version)

    def watch_partition_reassignment(self, listener: Listener) -> Deferred[ZNodeWatch]:
        """Creation, change and deletion of /admin/reassign_partitions."""
        return self.watch_data(ReassignPartitionsZNode.PATH, listener)

    @returns_deferred
    async def get_consumer_offset(self, group: str, tp: TopicPartition) -> int | None:
        topic, partition = tp
        found = await self._get_or_none(ConsumerOffset.path(group, topic, partition))
        return None if found is None else ConsumerOffset.decode(found[0])

    @returns_deferred
    async def set_consumer_offset(self, group: str, tp: TopicPartition, offset: int) -> None:
        """Kafka's setOrCreateConsumerOffset: write the znode, creating it and its parents if new."""
        topic, partition = tp
        path, data = ConsumerOffset.path(group, topic, partition), ConsumerOffset.encode(offset)
        try:
            await self._write(ZkOp.set(path, data), MATCH_ANY_VERSION)
        except NoNodeError:
            await self._create_recursive(path, data, must_be_new=False)

    # -- configs ---------------------------------------------------------------------

    @returns_deferred
    async def get_entity_configs(self, entity_type: str, entity_name: str) -> dict[str, str]:
        found = await self._get_or_none(ConfigEntityZNode.path(entity_type, entity_name))
        return ConfigEntityZNode.decode(found[0]) if found else {}

    @returns_deferred
    async def get_entity_names(self, entity_path: str) -> list[str]:
        """Children of /config/<entity_path> (e.g. "users" or "users/alice/clients"), sorted."""
        return sorted(await self._children(ConfigEntityTypeZNode.path(entity_path)))

    @returns_deferred
    async def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        names = list(topics)
        reads = await gather([self.get_entity_configs(ConfigType.TOPIC, t) for t in names])
        return dict(zip(names, reads))

    @returns_deferred
    async def set_or_create_entity_configs(
        self, entity_type: str, entity_name: str, configs: Mapping[str, str]
    ) -> None:
        """Write /config/<type>/<name> whole, creating it if needed. Brokers are not told."""
        path = ConfigEntityZNode.path(entity_type, entity_name)
        data = ConfigEntityZNode.encode(configs)
        try:
            await self._req(lambda: self._kazoo.set_async(path, data, MATCH_ANY_VERSION))
        except NoNodeError:
            try:
                await self._create_recursive(path, data)
            except NodeExistsError:
                await self._req(lambda: self._kazoo.set_async(path, data, MATCH_ANY_VERSION))

    @returns_deferred
    async def create_config_change_notification(self, entity_path: str) -> str:
        """Tell every broker to reload one entity's config; returns the sequential znode's path."""
        await self._create_recursive(ConfigEntityChangeNotificationZNode.PATH, None, must_be_new=False)
        data = ConfigEntityChangeNotificationZNode.encode(entity_path)
        return await self._create(ConfigEntityChangeNotificationZNode.create_path(), data, sequence=True)

    @returns_deferred
    async def change_entity_config(self, entity_type: str, entity_name: str, configs: Mapping[str, str]) -> None:
        """Replace an entity's overrides and notify the brokers (AdminZkClient.changeEntityConfig)."""
        await self.set_or_create_entity_configs(entity_type, entity_name, configs)
        await self.create_config_change_notification(f"{entity_type}/{entity_name}")

    @returns_deferred
    async def get_broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """Dynamic configs of one broker (/config/brokers/<id>) or, for None, the cluster
        default (/config/brokers/<default>), as stored."""
        name = ConfigEntityName.DEFAULT if broker_id is None else str(broker_id)
        return await self.get_entity_configs(ConfigType.BROKER, name)

    @returns_deferred
    async def change_broker_config(self, broker_id: int | None, configs: Mapping[str, str]) -> None:
        """Replace one broker's dynamic configs (None: the cluster default) and notify every
        broker (AdminZkClient.changeBrokerConfig, after the caller's validation)."""
        name = ConfigEntityName.DEFAULT if broker_id is None else str(broker_id)
        await self.change_entity_config(ConfigType.BROKER, name, configs)

    @returns_deferred
    async def get_config_change_notifications(self) -> list[str]:
        """Names of the pending config change notifications, oldest first."""
        children = await self._children(ConfigEntityChangeNotificationZNode.PATH)
        return sorted((c for c in children if c.startswith(ConfigEntityChangeNotificationZNode.SEQUENCE_PREFIX)),
                      key=ConfigEntityChangeNotificationZNode.sequence_number)

    @returns_deferred
    async def get_config_change_notification(self, name: str) -> tuple[str, int] | None:
        """(entity path, creation time in ms) of one notification; None if it is gone.
        ZNodeDecodeError for a notification Kafka 2.8 would not read either."""
        found = await self._get_or_none(f"{ConfigEntityChangeNotificationZNode.PATH}/{name}")
        if found is None:
            return None
        return ConfigEntityChangeNotificationZNode.decode(found[0]), int(found[1].ctime)

    @returns_deferred
    async def delete_config_change_notification(self, name: str) -> None:
        """Remove a processed notification (any broker may; a missing one is fine)."""
        try:
            await self._req(lambda: self._kazoo.delete_async(f"{ConfigEntityChangeNotificationZNode.PATH}/{name}"))
        except NoNodeError:
            pass

    @returns_deferred
    async def change_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        if not await self.topic_exists(topic):
            raise UnknownTopicError(f"Topic {topic} does not exist.")
        await self.change_entity_config(ConfigType.TOPIC, topic, configs)

    # -- topic deletion ----------------------------------------------------------------

    @returns_deferred
    async def mark_topic_for_deletion(self, topic: str) -> None:
        """Queue a topic for the controller's deletion manager (/admin/delete_topics/<topic>)."""
        if not await self.topic_exists(topic):
            raise UnknownTopicError(f"topic {topic} to delete does not exist")
        try:
            await self._create_recursive(DeleteTopicsZNode.topic_path(topic), None)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(f"topic {topic} is already marked for deletion") from None

    @returns_deferred
    async def get_topic_deletions(self) -> list[str]:
        return sorted(await self._children(DeleteTopicsZNode.PATH))

    @returns_deferred
    async def delete_topic_deletions(self, topics: Iterable[str], controller_epoch_zk_version: int) -> None:
        await self._for_each(
            lambda t: self._delete_if_present(DeleteTopicsZNode.topic_path(t), controller_epoch_zk_version), topics
        )

    @returns_deferred
    async def delete_topic_znode(self, topic: str, controller_epoch_zk_version: int) -> None:
        """Delete /brokers/topics/<topic> with its partitions and states."""
        await self._delete_recursive(TopicZNode.path(topic), controller_epoch_zk_version)

    @returns_deferred
    async def delete_topic_configs(self, topics: Iterable[str], controller_epoch_zk_version: int) -> None:
        paths = [ConfigEntityZNode.path(ConfigType.TOPIC, t) for t in topics]
        await self._for_each(lambda path: self._delete_if_present(path, controller_epoch_zk_version), paths)

    # -- ISR change notifications -----------------------------------------------------

    @returns_deferred
    async def propagate_isr_changes(self, partitions: Sequence[TopicPartition]) -> str:
        """A leader's note to the controller that these ISRs changed; returns the znode path."""
        data = IsrChangeNotificationZNode.encode(partitions)
        return await self._create(IsrChangeNotificationZNode.create_path(), data, sequence=True)

    @returns_deferred
    async def get_all_isr_change_notifications(self) -> list[str]:
        """Sequence numbers of pending notifications, oldest first."""
        children = await self._children(IsrChangeNotificationZNode.PATH)
        return sorted(IsrChangeNotificationZNode.sequence_number(c) for c in children)

    @returns_deferred
    async def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: Iterable[str]
    ) -> list[TopicPartition]:
        """The partitions named by these notifications, each once, in notification order."""
        paths = [IsrChangeNotificationZNode.sequence_path(n) for n in sequence_numbers]
        reads = await self._for_each(self._get_or_none, paths)
        partitions: dict[TopicPartition, None] = {}
        for found in reads:
            if found is not None:
                partitions.update(dict.fromkeys(IsrChangeNotificationZNode.decode(found[0])))
        return list(partitions)

    @returns_deferred
    async def delete_isr_change_notifications(
        self, sequence_numbers: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        paths = [IsrChangeNotificationZNode.sequence_path(n) for n in sequence_numbers]
        await self._for_each(lambda path: self._delete_if_present(path, controller_epoch_zk_version), paths)

    # -- watches ---------------------------------------------------------------------

    @returns_deferred
    async def watch_children(
        self, path: str, listener: Listener, event_type: type[ZNodeEvent] = ChildrenChanged
    ) -> ZNodeWatch:
        """Standing watch on path's children; listener(event) runs on the reactor thread."""
        watch = ZNodeWatch(self.session, path, children=True, event_type=event_type, listener=listener)
        await watch.start()
        return watch

    @returns_deferred
    async def watch_data(
        self, path: str, listener: Listener, event_type: type[ZNodeEvent] = DataChanged
    ) -> ZNodeWatch:
        """Standing watch on path's data, creation and deletion."""
        watch = ZNodeWatch(self.session, path, children=False, event_type=event_type, listener=listener)
        await watch.start()
        return watch

    def watch_broker_changes(self, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_children(BROKER_IDS_PATH, listener, BrokerChange)

    def watch_topic_changes(self, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_children(TOPICS_PATH, listener, TopicChange)

    def watch_topic_deletions(self, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_children(DeleteTopicsZNode.PATH, listener, TopicDeletion)

    def watch_isr_change_notifications(self, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_children(IsrChangeNotificationZNode.PATH, listener, IsrChangeNotification)

    def watch_config_changes(self, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_children(ConfigEntityChangeNotificationZNode.PATH, listener, ConfigChangeNotification)

    def watch_controller(self, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_data(ControllerZNode.PATH, listener, ControllerChange)

    def watch_partition_modifications(self, topic: str, listener: Listener) -> Deferred[ZNodeWatch]:
        return self.watch_data(TopicZNode.path(topic), listener, PartitionModifications)

    # -- primitives --------------------------------------------------------------------

    @property
    def _kazoo(self) -> Any:
        return self.session.kazoo

    def _req(self, issue: Callable[[], Any]) -> Deferred[Any]:
        return self.session.request(issue)

    @staticmethod
    async def _settle_each(request: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Issue request(item) for every item at once, then wait: result or exception per item.

        All requests are on the wire before the first answer is awaited, so a batch costs
        about one round trip, not one per znode.
        """
        return await settle_all([Deferred.fromCoroutine(request(item)) for item in items])

    @staticmethod
    async def _for_each(request: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Like _settle_each, but raise the first failure once all have settled."""
        return await gather([Deferred.fromCoroutine(request(item)) for item in items])

    async def _get(self, path: str) -> tuple[bytes | None, ZnodeStat]:
        return await self._req(lambda: self._kazoo.get_async(path))

    async def _get_or_none(self, path: str) -> tuple[bytes | None, ZnodeStat] | None:
        try:
            return await self._get(path)
        except NoNodeError:
            return None

    async def _children(self, path: str) -> list[str]:
        try:
            return await self._req(lambda: self._kazoo.get_children_async(path))
        except NoNodeError:
            return []

    async def _create(self, path: str, data: bytes | None, *, ephemeral: bool = False, sequence: bool = False) -> str:
        return await self._req(lambda: self._kazoo.create_async(path, data, acl=self._acls(path), ephemeral=ephemeral,
                                                                sequence=sequence))

    async def _create_recursive(self, path: str, data: bytes | None, *, must_be_new: bool = True) -> None:
        """Create path, and its missing parents as null znodes (Kafka's createRecursive)."""
        try:
            await self._create(path, data)
        except NodeExistsError:
            if must_be_new:
                raise
        except NoNodeError:
            await self._create_recursive(path.rsplit("/", 1)[0], None, must_be_new=False)
            await self._create_recursive(path, data, must_be_new=must_be_new)

    async def _create_if_missing(self, path: str, controller_epoch_zk_version: int) -> None:
        try:
            await self._write(ZkOp.create(path, None), controller_epoch_zk_version)
        except NodeExistsError:
            pass

    async def _delete_if_present(self, path: str, controller_epoch_zk_version: int) -> None:
        try:
            await self._write(ZkOp.delete(path), controller_epoch_zk_version)
        except NoNodeError:
            pass

    async def _delete_recursive(self, path: str, controller_epoch_zk_version: int) -> None:
        children = [f"{path}/{child}" for child in await self._children(path)]
        await self._for_each(lambda child: self._delete_recursive(child, controller_epoch_zk_version), children)
        await self._delete_if_present(path, controller_epoch_zk_version)

    async def _write(self, op: ZkOp, controller_epoch_zk_version: int) -> Any:
        """Run one write; with a controller epoch version >= 0, fenced by a check of /controller_epoch.

        Returns what the write returns: a create the created path, a set the new stat.
        """
        if controller_epoch_zk_version < 0:
            return await self._req(lambda: self._single(op))
        check = ZkOp.check(ControllerEpochZNode.PATH, controller_epoch_zk_version)
        check_result, op_result = await self._req(lambda: self._transaction([check, op]).commit_async())
        if isinstance(check_result, BadVersionError):
            raise ControllerMovedError(
                f"controller epoch zk version check failed: expected {controller_epoch_zk_version}"
            )
        if isinstance(check_result, Exception) and not isinstance(check_result, RolledBackError):
            raise check_result
        if isinstance(op_result, Exception):
            raise op_result
        if op.kind == "create":
            return self._kazoo.unchroot(op_result)
        return op_result if op.kind == "set" else None

    def _single(self, op: ZkOp) -> Any:
        kazoo = self._kazoo
        if op.kind == "create":
            return kazoo.create_async(op.path, op.data, acl=self._acls(op.path), ephemeral=op.ephemeral,
                                      sequence=op.sequence)
        if op.kind == "set":
            return kazoo.set_async(op.path, op.data, op.version)
        return kazoo.delete_async(op.path, op.version)

    def _transaction(self, ops: Sequence[ZkOp]) -> Any:
        txn = self._kazoo.transaction()
        for op in ops:
            if op.kind == "check":
                txn.check(op.path, op.version)
            elif op.kind == "set":
                txn.set_data(op.path, op.data, op.version)
            elif op.kind == "delete":
                txn.delete(op.path, op.version)
            elif op.data is None:
                # kazoo's transaction API insists on bytes; Kafka writes null znodes.
                flags = (1 if op.ephemeral else 0) | (2 if op.sequence else 0)
                txn.operations.append(Create(self._chrooted(op.path), None, self._acls(op.path), flags))
            else:
                txn.create(op.path, op.data, acl=self._acls(op.path), ephemeral=op.ephemeral, sequence=op.sequence)
        return txn

    def _acls(self, path: str) -> list:
        """The ACLs a znode Kafka creates at `path` gets (open unless zookeeper.set.acl)."""
        return self.session.security.acls(path)

    def _chrooted(self, path: str) -> str:
        chroot = self._kazoo.chroot
        return f"{chroot}{path}" if chroot else path


def _first_failure(results: Sequence[Any]) -> Exception | None:
    """The error that failed a transaction: the one that is neither "rolled back" nor "not run"."""
    errors = [result for result in results if isinstance(result, Exception)]
    real = [e for e in errors if not isinstance(e, (RolledBackError, RuntimeInconsistency))]
    return (real or errors or [None])[0]


def _raise_if_fenced(outcomes: Sequence[Any]) -> None:
    for outcome in outcomes:
        if isinstance(outcome, ControllerMovedError):
            raise outcome


def _with_zk_version(state: LeaderIsrAndControllerEpoch, zk_version: int) -> LeaderIsrAndControllerEpoch:
    return replace(state, zk_version=zk_version)
