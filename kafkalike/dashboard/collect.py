"""One look at a cluster through the Kafka protocol and ZooKeeper, made on a worker thread.

Everything here blocks (kafkalike's admin client, kazoo's synchronous calls, urllib), so
the dashboard runs `Collector.collect` on a thread and never on its reactor. Every call has
a short deadline and every part is read on its own: a dead broker, a group whose
coordinator is gone or an unreachable ZooKeeper costs that part of the page, not the page.

Only requests a Kafka 2.8 broker answers are used (Metadata, DescribeCluster, ApiVersions,
ListGroups, DescribeGroups, OffsetFetch, ListOffsets), and only znodes Kafka writes
(/controller, /controller_epoch, /brokers/ids), so the dashboard works against any
ZooKeeper-mode Kafka cluster, not only kafkalike.
"""
from __future__ import annotations

import logging
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.client.connection import BrokerConnection, KafkaConnectionError, UnsupportedApiVersion
from kafkalike.client.groups import GroupListing, OffsetSpec
from kafkalike.dashboard.model import (DOWN, UP, BrokerRow, GroupRow, LagRow, MemberRow, PartitionRow,
                                       Snapshot, TopicRow)
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.list_groups import ListGroupsRequest
from kafkalike.zkdata.broker_registration import BrokerIdZNode
from kafkalike.zkdata.znodes import ControllerEpochZNode, ControllerZNode

log = logging.getLogger("kafkalike.dashboard")

# Every admin call gives up after this; a probe of one broker after PROBE_TIMEOUT.
API_TIMEOUT_MS = 6000
REQUEST_TIMEOUT_MS = 4000
PROBE_TIMEOUT = 2.0
SCRAPE_TIMEOUT = 3.0
ZK_TIMEOUT = 5.0

# Counter names in Snapshot.counters: series are "<label>\t<source>", summed by label.
PRODUCED = "produced"      # records appended per topic
FETCHED = "fetched"        # Prometheus: bytes out to consumers per topic; offsets: records consumed per group
SEP = "\t"

_MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
_BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"


def _quiet(name: str) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


class Collector:
    """Keeps the admin client, the ZooKeeper session and the brokers seen so far between looks.

    Not thread safe: the dashboard runs one `collect` at a time.
    """

    def __init__(self, bootstrap: str, zookeeper: str | None = None, metrics_urls: Sequence[str] = (),
                 admin_config: Mapping[str, str] | None = None) -> None:
        self.bootstrap = bootstrap
        self.zookeeper = zookeeper
        self.metrics_urls = tuple(metrics_urls)
        config = {"bootstrap.servers": bootstrap, "client.id": "kafkalike-dashboard",
                  "request.timeout.ms": str(REQUEST_TIMEOUT_MS), "default.api.timeout.ms": str(API_TIMEOUT_MS),
                  "retry.backoff.ms": "200"}
        config.update(admin_config or {})
        self.admin = AdminClient(config)
        self._zk: KazooClient | None = None
        self._seen: dict[int, tuple[str, int, str | None]] = {}   # id -> (host, port, rack)

    @property
    def rate_source(self) -> str:
        return "prometheus" if self.metrics_urls else "offsets"

    def close(self) -> None:
        self.admin.close()
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except KazooException:
                pass
            self._zk = None

    # -- the look ----------------------------------------------------------------------

    def collect(self) -> Snapshot:
        start = time.monotonic()
        errors: list[str] = []
        cluster_id, controller_id, live = None, -1, {}
        try:
            cluster = self.admin.describe_cluster()
            cluster_id, controller_id = cluster.cluster_id, cluster.controller_id
            live = {b.id: (b.host, b.port, b.rack) for b in cluster.brokers}
        except (KafkaAdminError, OSError, ValueError) as error:
            errors.append(f"cluster: {error}")
        zk = self._read_zookeeper(errors)
        controller_epoch = None
        registered: dict[int, tuple[str, int, str | None]] | None = None
        if zk is not None:
            zk_controller, controller_epoch, registered = zk
            if zk_controller is not None:
                controller_id = zk_controller
        self._seen.update(live)
        if registered:
            self._seen.update(registered)

        reached = cluster_id is not None or bool(live)
        # No broker answered: the other calls would each wait out the same deadline.
        topics = self._topics(errors) if reached else []
        for topic in topics:
            for p in topic.partitions:
                for replica in p.replicas:
                    self._seen.setdefault(replica, ("?", -1, None))
        brokers = self._brokers(live, registered, controller_id)
        up = {b.id for b in brokers if b.status == UP}
        log_end = self._log_end_offsets(topics, up, errors)
        topics = tuple(TopicRow(t.name, t.internal, tuple(
            PartitionRow(p.topic, p.partition, p.leader, p.replicas, p.isr, p.offline_replicas,
                         log_end.get((p.topic, p.partition))) for p in t.partitions)) for t in topics)
        groups = self._groups(log_end, [b for b in brokers if b.status == UP], errors) if reached else ()

        counters = {PRODUCED: {}, FETCHED: {}}
        if self.metrics_urls:
            self._scrape(counters, errors)
        else:
            for topic in topics:
                if topic.internal:
                    continue
                for p in topic.partitions:
                    if p.log_end_offset is not None:
                        counters[PRODUCED][f"{topic.name}{SEP}{p.partition}"] = float(p.log_end_offset)
            for group in groups:
                for lag in group.partitions:
                    if lag.current_offset is not None:
                        key = f"{group.group_id}{SEP}{lag.topic}-{lag.partition}"
                        counters[FETCHED][key] = float(lag.current_offset)
        return Snapshot(time.time(), time.monotonic() - start, cluster_id, controller_id, controller_epoch,
                        brokers, topics, groups, tuple(errors), counters)

    # -- ZooKeeper ------------------------------------------------------------------------

    def _read_zookeeper(self, errors: list[str]):
        """(controller id, controller epoch, registered brokers), or None without --zookeeper."""
        if not self.zookeeper:
            return None
        try:
            if self._zk is None:
                zk = KazooClient(hosts=self.zookeeper, timeout=ZK_TIMEOUT, logger=_quiet("kafkalike.dashboard.kazoo"))
                try:
                    zk.start(timeout=ZK_TIMEOUT)
                except Exception:
                    zk.close()
                    raise
                self._zk = zk
            zk = self._zk
            try:
                controller = ControllerZNode.decode(zk.get(ControllerZNode.path())[0])
            except NoNodeError:
                controller = None
            try:
                epoch = ControllerEpochZNode.decode(zk.get(ControllerEpochZNode.path())[0])
            except NoNodeError:
                epoch = None
            registered = {}
            for child in zk.get_children("/brokers/ids"):
                try:
                    registration = BrokerIdZNode.decode(int(child), zk.get(BrokerIdZNode.path(int(child)))[0])
                except (NoNodeError, ValueError):
                    continue
                registered[registration.id] = (registration.host or "?", registration.port, registration.rack)
            return controller if controller is not None else -1, epoch, registered
        except (KazooException, KazooTimeoutError, ValueError, OSError) as error:
            errors.append(f"zookeeper {self.zookeeper}: {type(error).__name__} {error}".rstrip())
            return None

    # -- brokers --------------------------------------------------------------------------

    def _brokers(self, live, registered, controller_id: int) -> tuple[BrokerRow, ...]:
        ids = sorted(self._seen)
        with ThreadPoolExecutor(max_workers=min(8, max(1, len(ids)))) as pool:
            probes = dict(zip(ids, pool.map(lambda i: _probe(*self._seen[i][:2], self.admin.security), ids)))
        rows = []
        for broker_id in ids:
            host, port, rack = self._seen[broker_id]
            reason = probes[broker_id]
            in_zk = None if registered is None else broker_id in registered
            if not reason and in_zk is False:
                reason = "not registered in ZooKeeper"
            if not reason and broker_id not in live and registered is None:
                reason = "not in the cluster's metadata"
            rows.append(BrokerRow(broker_id, host, port, rack, DOWN if reason else UP,
                                  broker_id == controller_id, broker_id in live, in_zk, reason))
        return tuple(rows)

    # -- topics ---------------------------------------------------------------------------

    def _topics(self, errors: list[str]) -> list[TopicRow]:
        try:
            listings = self.admin.list_topics(include_internal=True)
        except (KafkaAdminError, OSError) as error:
            errors.append(f"topics: {error}")
            return []
        try:
            described = self.admin.describe_topics([t.name for t in listings]) if listings else {}
        except (KafkaAdminError, OSError):
            described = {}      # one topic being created or deleted: describe the others one by one
            for listing in listings:
                try:
                    described.update(self.admin.describe_topics([listing.name]))
                except (KafkaAdminError, OSError) as error:
                    errors.append(f"topic {listing.name}: {error}")
        out = []
        for name in sorted(described):
            d = described[name]
            out.append(TopicRow(name, d.is_internal, tuple(
                PartitionRow(name, p.partition, p.leader, tuple(p.replicas), tuple(p.isr), tuple(p.offline_replicas))
                for p in sorted(d.partitions, key=lambda p: p.partition))))
        return out

    def _log_end_offsets(self, topics: list[TopicRow], up: set[int], errors: list[str]) -> dict[tuple[str, int], int]:
        """The high watermark of every partition whose leader answers, asked of each leader apart."""
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for topic in topics:
            for p in topic.partitions:
                if p.leader is not None and p.leader in up:
                    by_leader.setdefault(p.leader, []).append((p.topic, p.partition))
        out: dict[tuple[str, int], int] = {}
        for leader, tps in sorted(by_leader.items()):
            try:
                listed = self.admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
            except (KafkaAdminError, OSError) as error:
                errors.append(f"log end offsets from broker {leader}: {error}")
                continue
            out.update({tp: o.offset for tp, o in listed.items() if o.offset >= 0})
        return out

    # -- groups ---------------------------------------------------------------------------

    def _list_groups(self, brokers: Sequence[BrokerRow], errors: list[str]) -> list[GroupListing]:
        """ListGroups asked of each broker that answers (each lists the groups it coordinates),
        so a dead broker still in the metadata costs only its own groups, not the call."""
        found: dict[str, GroupListing] = {}
        for broker in brokers:
            connection = BrokerConnection(broker.host, broker.port, client_id="kafkalike-dashboard",
                                          timeout=REQUEST_TIMEOUT_MS / 1000, security=self.admin.security)
            try:
                connection.connect()
                version = connection.pick_version(ListGroupsRequest.API_KEY)
                response = connection.send(ListGroupsRequest(states_filter=[]), version)
            except (KafkaConnectionError, UnsupportedApiVersion) as error:
                errors.append(f"groups of broker {broker.id}: {error}")
                continue
            finally:
                connection.close()
            if response.error_code != ErrorCode.NONE:
                errors.append(f"groups of broker {broker.id}: {ErrorCode(response.error_code).name}")
                continue
            for g in response.groups:
                found[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state if version >= 4 else None)
        return [found[g] for g in sorted(found)]

    def _groups(self, log_end: dict[tuple[str, int], int], brokers: Sequence[BrokerRow],
                errors: list[str]) -> tuple[GroupRow, ...]:
        listings = [g for g in self._list_groups(brokers, errors) if g.is_consumer_group]
        rows = []
        for listing in listings:
            group_id = listing.group_id
            try:
                described = self.admin.describe_groups([group_id])[group_id]
                committed = self.admin.list_group_offsets(group_id)
            except (KafkaAdminError, OSError) as error:
                rows.append(GroupRow(group_id, listing.state or "Unknown", listing.protocol_type, "", None, (), (),
                                     str(error)))
                continue
            members = tuple(MemberRow(m.member_id, m.client_id, m.host, tuple(m.assignment))
                            for m in sorted(described.members, key=lambda m: m.member_id))
            owner = {tp: m for m in members for tp in m.assignment}
            partitions = sorted(set(committed) | set(owner))
            lags = tuple(LagRow(t, p, committed[(t, p)].offset if (t, p) in committed else None,
                                log_end.get((t, p)),
                                owner[(t, p)].member_id if (t, p) in owner else None,
                                owner[(t, p)].host if (t, p) in owner else None,
                                owner[(t, p)].client_id if (t, p) in owner else None)
                         for t, p in partitions)
            rows.append(GroupRow(group_id, described.state, described.protocol_type, described.partition_assignor,
                                 described.coordinator.id, members, lags))
        return tuple(sorted(rows, key=lambda g: g.group_id))

    # -- Prometheus -----------------------------------------------------------------------

    def _scrape(self, counters: dict[str, dict[str, float]], errors: list[str]) -> None:
        from prometheus_client.parser import text_string_to_metric_families

        for url in self.metrics_urls:
            try:
                with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
                    text = response.read().decode("utf-8", "replace")
                families = list(text_string_to_metric_families(text))
            except (OSError, ValueError) as error:
                errors.append(f"metrics {url}: {error}")
                continue
            for family in families:
                for sample in family.samples:
                    topic = sample.labels.get("topic")
                    if not topic:
                        continue
                    if sample.name == _MESSAGES_IN:
                        counters[PRODUCED][f"{topic}{SEP}{url}"] = sample.value
                    elif sample.name == _BYTES_OUT:
                        counters[FETCHED][f"{topic}{SEP}{url}"] = sample.value


def _probe(host: str, port: int, security=None) -> str:
    """'' when the broker answers ApiVersions within PROBE_TIMEOUT (over the admin client's
    security protocol: TLS and SASL from --command-config), else why not."""
    if port < 0:
        return "never seen registered"
    connection = BrokerConnection(host, port, client_id="kafkalike-dashboard", timeout=PROBE_TIMEOUT,
                                  security=security)
    try:
        connection.connect()
        return ""
    except KafkaConnectionError as error:
        return str(error) or type(error).__name__
    except Exception as error:  # a broker that answers nonsense is not up either
        return f"{type(error).__name__}: {error}"
    finally:
        connection.close()
