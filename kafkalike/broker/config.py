"""Broker configuration: Kafka 2.8's server.properties keys, their types, defaults and rules.

Operators bring server.properties files written for real Kafka, so every key Kafka 2.8's
KafkaConfig defines is known here with Kafka's exact default, even those kafkalike only
accepts (SSL, SASL, quotas): a known key is never reported as unknown, and a value Kafka
would refuse is refused with Kafka's wording ("Invalid value abc for configuration
num.partitions: Not a number of type INT"), naming the key the operator has to fix.

The table is declarative (one `ConfigKey` per key, on the engine shared with topic and
client configs in kafkalike.common.config_def) because three consumers read it:
parsing and validation at startup, DescribeConfigs (type, sensitivity, read-only,
documentation, source) and `kafka-configs.sh --describe --all`.
"""
from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from kafkalike import properties
from kafkalike.common.config_def import (
    DOUBLE_MAX,
    INT_MAX,
    INTEGER_PATTERN,
    LONG_MAX,
    NO_DEFAULT,
    ConfigError,
    ConfigKey,
    ConfigType,
    Password,
    UpdateMode,
    Validator,
    api_version,
    at_least,
    each_one_of,
    invalid,
    java_double,
    java_string,
    one_of,
    parse_all,
    split_list,
)
from kafkalike.common.resources import ConfigSource, ConfigSynonym
from kafkalike.common.versions import (
    API_VERSIONS,
    LATEST_API_VERSION,
    api_version_at_least,
    record_version,
    resolve_api_version,
)

__all__ = [
    "BROKER_CONFIG", "COMPRESSION_TYPES", "SECURITY_PROTOCOLS", "TOPIC_CONFIG_SYNONYMS",
    "ConfigEntry", "EndPoint", "KafkaConfig", "broker_synonyms", "known_key_names",
    "parse_endpoints", "parse_overrides", "parse_protocol_map",
    # The engine's and the version table's names the broker reads from here.
    "ConfigError", "ConfigKey", "ConfigSource", "ConfigType", "Password", "UpdateMode",
    "api_version_at_least", "java_double", "java_string", "resolve_api_version",
]

_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*\Z")


def _java_class(name: str, value: Any) -> None:
    """Class keys: kafkalike loads no Java classes, so a value must at least be a class name."""
    if value is not None and not (isinstance(value, str) and _CLASS_NAME.match(value)):
        raise invalid(name, value, f"Class {java_string(value)} cannot be found")


# ---------------------------------------------------------------- the table

B, S, I, SH, L, D, LS, C, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT,
                               ConfigType.SHORT, ConfigType.LONG, ConfigType.DOUBLE,
                               ConfigType.LIST, ConfigType.CLASS, ConfigType.PASSWORD)
RO, PB, CW = UpdateMode.READ_ONLY, UpdateMode.PER_BROKER, UpdateMode.CLUSTER_WIDE
_ALL_PROTOCOLS_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"


def _k(name: str, ctype: ConfigType, default: Any, doc: str, validator: Validator | None = None,
       mode: UpdateMode = RO, internal: bool = False) -> ConfigKey:
    if isinstance(default, list):
        default = tuple(default)
    if ctype is C and validator is None:
        validator = _java_class
    return ConfigKey(name, ctype, default, doc, validator, mode, internal)


_KEYS: tuple[ConfigKey, ...] = (
    # ZooKeeper
    _k("zookeeper.connect", S, NO_DEFAULT, "ZooKeeper ensemble as host:port pairs separated by commas, "
       "optionally followed by a chroot path (host1:2181,host2:2181/kafka) under which this cluster keeps its znodes."),
    _k("zookeeper.session.timeout.ms", I, 18000, "ZooKeeper session timeout; a broker silent this long loses its "
       "ephemeral registration (and the controller role, if it held it)."),
    _k("zookeeper.connection.timeout.ms", I, None, "How long the broker waits to establish its ZooKeeper connection; "
       "unset means zookeeper.session.timeout.ms."),
    _k("zookeeper.sync.time.ms", I, 2000, "How far a ZooKeeper follower may lag its leader; kept for compatibility, unused."),
    _k("zookeeper.set.acl", B, False, "Whether the broker creates znodes with secure ACLs."),
    _k("zookeeper.max.in.flight.requests", I, 10, "Upper bound on unacknowledged requests the broker pipelines to "
       "ZooKeeper before it waits.", at_least(1)),
    _k("zookeeper.ssl.client.enable", B, False, "Connect to ZooKeeper over TLS."),
    _k("zookeeper.clientCnxnSocket", S, None, "ZooKeeper client socket implementation (Java class); needed for TLS."),
    _k("zookeeper.ssl.keystore.location", S, None, "Keystore for TLS client authentication to ZooKeeper."),
    _k("zookeeper.ssl.keystore.password", P, None, "Password of the ZooKeeper client keystore."),
    _k("zookeeper.ssl.keystore.type", S, None, "Format of the ZooKeeper client keystore."),
    _k("zookeeper.ssl.truststore.location", S, None, "Truststore used to verify ZooKeeper servers."),
    _k("zookeeper.ssl.truststore.password", P, None, "Password of the ZooKeeper truststore."),
    _k("zookeeper.ssl.truststore.type", S, None, "Format of the ZooKeeper truststore."),
    _k("zookeeper.ssl.protocol", S, "TLSv1.2", "TLS protocol used towards ZooKeeper."),
    _k("zookeeper.ssl.enabled.protocols", LS, None, "TLS protocols allowed towards ZooKeeper."),
    _k("zookeeper.ssl.cipher.suites", LS, None, "Cipher suites allowed towards ZooKeeper."),
    _k("zookeeper.ssl.endpoint.identification.algorithm", S, "HTTPS", "Whether to check the ZooKeeper server's "
       "host name against its certificate (HTTPS) or not (empty)."),
    _k("zookeeper.ssl.crl.enable", B, False, "Check certificate revocation lists for ZooKeeper TLS."),
    _k("zookeeper.ssl.ocsp.enable", B, False, "Check certificates with OCSP for ZooKeeper TLS."),
    # General
    _k("broker.id.generation.enable", B, True, "Let a broker without broker.id take a generated id above "
       "reserved.broker.max.id."),
    _k("reserved.broker.max.id", I, 1000, "Highest id an operator may assign; generated ids start above it.", at_least(0)),
    _k("broker.id", I, -1, "This broker's id, unique in the cluster; -1 asks for a generated one."),
    _k("message.max.bytes", I, 1048588, "Largest record batch the broker accepts (after compression); the default "
       "for the topic-level max.message.bytes.", at_least(0), CW),
    _k("num.network.threads", I, 3, "Network threads in Kafka; accepted and reported, kafkalike uses one reactor.",
       at_least(1), CW),
    _k("num.io.threads", I, 8, "Request handler threads in Kafka; accepted and reported, kafkalike handles requests "
       "on its reactor.", at_least(1), CW),
    _k("num.replica.alter.log.dirs.threads", I, None, "Threads moving replicas between log directories; unset means "
       "one per log directory."),
    _k("background.threads", I, 10, "Threads for background work such as deleting old segments.", at_least(1), CW),
    _k("queued.max.requests", I, 500, "Requests that may wait for a handler before the network layer stops reading.",
       at_least(1)),
    _k("queued.max.request.bytes", L, -1, "Bytes of queued requests before reading stops; -1 means no limit."),
    _k("request.timeout.ms", I, 30000, "How long the broker's own clients wait for an answer."),
    _k("socket.connection.setup.timeout.ms", L, 10000, "First timeout for opening a connection to another node."),
    _k("socket.connection.setup.timeout.max.ms", L, 30000, "Cap on the connection timeout as it grows "
       "exponentially after repeated failures."),
    _k("authorizer.class.name", S, "", "Authorizer implementation; empty means every request is allowed."),
    # Socket server
    _k("port", I, 9092, "Deprecated: port of the implicit PLAINTEXT listener when listeners is unset."),
    _k("host.name", S, "", "Deprecated: host of the implicit listener when listeners is unset; empty binds all "
       "interfaces."),
    _k("listeners", S, None, "Comma-separated NAME://host:port sockets to listen on; empty host binds all "
       "interfaces, port 0 picks a free port. Unset means PLAINTEXT://:9092.", mode=PB),
    _k("advertised.host.name", S, None, "Deprecated: host published when advertised.listeners and listeners are unset."),
    _k("advertised.port", I, None, "Deprecated: port published when advertised.listeners and listeners are unset."),
    _k("advertised.listeners", S, None, "Addresses registered in ZooKeeper for clients and other brokers, if they "
       "differ from listeners (unset means listeners). 0.0.0.0 is not a usable address here.", mode=PB),
    _k("listener.security.protocol.map", S, _ALL_PROTOCOLS_MAP, "Maps each listener name to its security protocol "
       "as NAME:PROTOCOL pairs.", mode=PB),
    _k("control.plane.listener.name", S, None, "Listener reserved for controller-to-broker requests; unset means "
       "controller traffic shares the inter-broker listener."),
    _k("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF of the listening sockets; -1 keeps the OS default."),
    _k("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF of the listening sockets; -1 keeps the OS default."),
    _k("socket.request.max.bytes", I, 104857600, "Largest request the broker reads; bigger ones close the "
       "connection.", at_least(1)),
    _k("max.connections.per.ip", I, INT_MAX, "Connections allowed from one address.", at_least(0), CW),
    _k("max.connections.per.ip.overrides", S, "", "Per-address exceptions to max.connections.per.ip as "
       "host:count pairs.", mode=CW),
    _k("max.connections", I, INT_MAX, "Connections the broker accepts in total.", at_least(0), CW),
    _k("max.connection.creation.rate", I, INT_MAX, "New connections accepted per second.", at_least(0), CW),
    _k("connections.max.idle.ms", L, 600000, "Idle connections are closed after this long."),
    _k("connection.failed.authentication.delay.ms", I, 100, "Delay before closing a connection whose "
       "authentication failed.", at_least(0)),
    _k("broker.rack", S, None, "Rack of this broker, used to spread replicas across racks."),
    # Log basics
    _k("num.partitions", I, 1, "Partitions of a topic created without an explicit count.", at_least(1)),
    _k("log.dir", S, "/tmp/kafka-logs", "Directory for partition data when log.dirs is unset."),
    _k("log.dirs", S, None, "Comma-separated directories for partition data; unset means log.dir."),
    _k("log.segment.bytes", I, 1073741824, "A segment file rolls when it reaches this size.", at_least(14), CW),
    _k("log.roll.ms", L, None, "A segment rolls when its first record is this old; unset means log.roll.hours.",
       mode=CW),
    _k("log.roll.hours", I, 168, "Segment age, in hours, that forces a roll (below log.roll.ms).", at_least(1)),
    _k("log.roll.jitter.ms", L, None, "Random amount subtracted from the roll time so segments do not roll "
       "together; unset means log.roll.jitter.hours.", mode=CW),
    _k("log.roll.jitter.hours", I, 0, "Roll jitter in hours (below log.roll.jitter.ms).", at_least(0)),
    _k("log.retention.ms", L, None, "How long segments are kept before deletion; -1 keeps them forever. "
       "Unset means log.retention.minutes, then log.retention.hours.", mode=CW),
    _k("log.retention.minutes", I, None, "Retention in minutes (below log.retention.ms)."),
    _k("log.retention.hours", I, 168, "Retention in hours (below log.retention.ms and log.retention.minutes)."),
    _k("log.retention.bytes", L, -1, "Size a partition may keep before old segments are deleted; -1 means "
       "no size limit.", mode=CW),
    _k("log.retention.check.interval.ms", L, 300000, "How often the retention rules are applied.", at_least(1)),
    _k("log.cleanup.policy", LS, ["delete"], "What happens to old segments: delete, compact, or both.",
       each_one_of("compact", "delete"), CW),
    _k("log.cleaner.threads", I, 1, "Threads compacting logs.", at_least(0), CW),
    _k("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, "Throttle on the cleaner's reads and writes together.",
       mode=CW),
    _k("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for the key-to-offset map of all cleaner threads.",
       mode=CW),
    _k("log.cleaner.io.buffer.size", I, 524288, "I/O buffer memory of all cleaner threads.", at_least(0), CW),
    _k("log.cleaner.io.buffer.load.factor", D, 0.9, "How full the cleaner's dedupe map may get.", mode=CW),
    _k("log.cleaner.backoff.ms", L, 15000, "Cleaner sleep when no log needs cleaning.", at_least(0), CW),
    _k("log.cleaner.min.cleanable.ratio", D, 0.5, "Dirty fraction of a log above which it is compacted.", mode=CW),
    _k("log.cleaner.enable", B, True, "Run the log cleaner; compacted topics (such as __consumer_offsets) need it."),
    _k("log.cleaner.delete.retention.ms", L, 86400000, "How long tombstones stay in compacted topics.", mode=CW),
    _k("log.cleaner.min.compaction.lag.ms", L, 0, "Records younger than this are never compacted.", mode=CW),
    _k("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Records older than this make their log eligible for "
       "compaction regardless of the dirty ratio.", mode=CW),
    _k("log.index.size.max.bytes", I, 10485760, "Preallocated size of offset and time index files.", at_least(4), CW),
    _k("log.index.interval.bytes", I, 4096, "Bytes of log between two offset index entries.", at_least(0), CW),
    _k("log.flush.interval.messages", L, LONG_MAX, "Messages appended before a forced fsync; the default leaves "
       "flushing to the OS.", at_least(1), CW),
    _k("log.segment.delete.delay.ms", L, 60000, "Delay between marking a segment deleted and removing its files.",
       at_least(0), CW),
    _k("log.flush.scheduler.interval.ms", L, LONG_MAX, "How often the flusher looks for logs due an fsync."),
    _k("log.flush.interval.ms", L, None, "Longest time appended data may stay unflushed; unset means "
       "log.flush.scheduler.interval.ms.", mode=CW),
    _k("log.flush.offset.checkpoint.interval.ms", I, 60000, "How often recovery points are checkpointed.",
       at_least(0)),
    _k("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "How often log start offsets are checkpointed.",
       at_least(0)),
    _k("log.preallocate", B, False, "Preallocate segment files at creation.", mode=CW),
    _k("num.recovery.threads.per.data.dir", I, 1, "Threads per log directory for recovery at startup and flushing "
       "at shutdown.", at_least(1), CW),
    _k("auto.create.topics.enable", B, True, "Create a topic when a client asks for metadata of an unknown one."),
    _k("min.insync.replicas", I, 1, "With acks=all, the in-sync replicas a write needs before it succeeds.",
       at_least(1), CW),
    _k("log.message.format.version", S, LATEST_API_VERSION, "Record format version the broker writes; must not be "
       "newer than inter.broker.protocol.version.", api_version),
    _k("log.message.timestamp.type", S, "CreateTime", "Whether record timestamps come from the producer "
       "(CreateTime) or the broker's clock (LogAppendTime).", one_of("CreateTime", "LogAppendTime"), CW),
    _k("log.message.timestamp.difference.max.ms", L, LONG_MAX, "With CreateTime, how far a record's timestamp may "
       "be from the broker's clock.", mode=CW),
    _k("create.topic.policy.class.name", C, None, "Policy class consulted before a topic is created."),
    _k("alter.config.policy.class.name", C, None, "Policy class consulted before configs are altered."),
    _k("log.message.downconversion.enable", B, True, "Convert records to older formats for old consumers.",
       mode=CW),
    # Replication
    _k("controller.socket.timeout.ms", I, 30000, "Timeout of controller-to-broker requests."),
    _k("default.replication.factor", I, 1, "Replication factor of automatically created topics."),
    _k("replica.lag.time.max.ms", L, 30000, "A follower that has not caught up for this long leaves the ISR."),
    _k("replica.socket.timeout.ms", I, 30000, "Socket timeout of follower fetches; at least "
       "replica.fetch.wait.max.ms."),
    _k("replica.socket.receive.buffer.bytes", I, 65536, "SO_RCVBUF of follower fetch connections."),
    _k("replica.fetch.max.bytes", I, 1048576, "Bytes a follower asks for per partition (a larger first batch "
       "is still returned).", at_least(0)),
    _k("replica.fetch.wait.max.ms", I, 500, "How long a follower fetch waits on the leader for data."),
    _k("replica.fetch.backoff.ms", I, 1000, "Pause after a failed follower fetch.", at_least(0)),
    _k("replica.fetch.min.bytes", I, 1, "Bytes a follower fetch waits for before the leader answers."),
    _k("replica.fetch.response.max.bytes", I, 10485760, "Bytes a follower expects in one fetch response.",
       at_least(0)),
    _k("num.replica.fetchers", I, 1, "Fetcher connections per source broker.", mode=CW),
    _k("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often high watermarks are checkpointed."),
    _k("fetch.purgatory.purge.interval.requests", I, 1000, "Completed delayed fetches tolerated before a purge."),
    _k("producer.purgatory.purge.interval.requests", I, 1000, "Completed delayed produces tolerated before a purge."),
    _k("delete.records.purgatory.purge.interval.requests", I, 1, "Completed delayed record deletions tolerated "
       "before a purge."),
    _k("auto.leader.rebalance.enable", B, True, "Let the controller move leadership back to preferred replicas."),
    _k("leader.imbalance.per.broker.percentage", I, 10, "Share of non-preferred leaders on a broker that triggers "
       "a rebalance."),
    _k("leader.imbalance.check.interval.seconds", L, 300, "How often the controller checks leader balance."),
    _k("unclean.leader.election.enable", B, False, "Allow an out-of-sync replica to become leader, losing data, "
       "when no in-sync replica is alive.", mode=CW),
    _k("security.inter.broker.protocol", S, "PLAINTEXT", "Protocol brokers use among themselves; set this or "
       "inter.broker.listener.name, not both."),
    _k("inter.broker.protocol.version", S, LATEST_API_VERSION, "Protocol version brokers use among themselves; "
       "held back during rolling upgrades.", api_version),
    _k("inter.broker.listener.name", S, None, "Listener brokers use among themselves."),
    _k("replica.selector.class", S, None, "Chooses the replica a consumer fetches from; unset means the leader."),
    # Controlled shutdown
    _k("controlled.shutdown.max.retries", I, 3, "Attempts at a controlled shutdown before shutting down anyway."),
    _k("controlled.shutdown.retry.backoff.ms", L, 5000, "Pause between controlled shutdown attempts."),
    _k("controlled.shutdown.enable", B, True, "Move leadership away before shutting down."),
    # Group coordinator
    _k("group.min.session.timeout.ms", I, 6000, "Smallest session timeout a consumer group member may ask for."),
    _k("group.max.session.timeout.ms", I, 1800000, "Largest session timeout a consumer group member may ask for."),
    _k("group.initial.rebalance.delay.ms", I, 3000, "How long the first rebalance of an empty group waits for "
       "more members."),
    _k("group.max.size", I, INT_MAX, "Members allowed in one group.", at_least(1)),
    # Offset management
    _k("offset.metadata.max.bytes", I, 4096, "Largest metadata string allowed with an offset commit."),
    _k("offsets.load.buffer.size", I, 5242880, "Read size when loading groups from __consumer_offsets.",
       at_least(1)),
    _k("offsets.topic.replication.factor", SH, 3, "Replication factor of __consumer_offsets; its creation waits "
       "until this many brokers are alive.", at_least(1)),
    _k("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets; fixed once the topic exists.",
       at_least(1)),
    _k("offsets.topic.segment.bytes", I, 104857600, "Segment size of __consumer_offsets.", at_least(1)),
    _k("offsets.topic.compression.codec", I, 0, "Compression of offset commit batches (0 none, 1 gzip, 2 snappy, "
       "3 lz4, 4 zstd)."),
    _k("offsets.retention.minutes", I, 10080, "Committed offsets of an empty group are dropped after this long.",
       at_least(1)),
    _k("offsets.retention.check.interval.ms", L, 600000, "How often stale offsets are looked for.", at_least(1)),
    _k("offsets.commit.timeout.ms", I, 5000, "How long an offset commit waits for replication.", at_least(1)),
    _k("offsets.commit.required.acks", SH, -1, "Acks an offset commit needs; leave at -1."),
    _k("delete.topic.enable", B, True, "Allow topics to be deleted."),
    _k("compression.type", S, "producer", "Compression of stored batches: producer keeps the producer's codec; "
       "uncompressed, gzip, snappy, lz4 or zstd recompress.", mode=CW),
    # Transactions
    _k("transactional.id.expiration.ms", I, 604800000, "A transactional id unused for this long is forgotten, "
       "and so is a partition's idle producer id.",
       at_least(1)),
    _k("transaction.max.timeout.ms", I, 900000, "Longest transaction timeout a producer may ask for.", at_least(1)),
    _k("transaction.state.log.min.isr", I, 2, "min.insync.replicas of __transaction_state.", at_least(1)),
    _k("transaction.state.log.load.buffer.size", I, 5242880, "Read size when loading __transaction_state.",
       at_least(1)),
    _k("transaction.state.log.replication.factor", SH, 3, "Replication factor of __transaction_state.", at_least(1)),
    _k("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state.", at_least(1)),
    _k("transaction.state.log.segment.bytes", I, 104857600, "Segment size of __transaction_state.", at_least(1)),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, "How often timed-out "
       "transactions are aborted.", at_least(1)),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000, "How often expired "
       "transactional ids are removed.", at_least(1)),
    # Fetch
    _k("max.incremental.fetch.session.cache.slots", I, 1000, "Incremental fetch sessions kept.", at_least(0)),
    _k("fetch.max.bytes", I, 57671680, "Most bytes one fetch response carries.", at_least(1024)),
    # Metrics
    _k("metrics.num.samples", I, 2, "Samples kept per metric.", at_least(1)),
    _k("metrics.sample.window.ms", L, 30000, "Length of one metrics sample.", at_least(1)),
    _k("metric.reporters", LS, [], "Metrics reporter classes.", mode=CW),
    _k("metrics.recording.level", S, "INFO", "Highest metrics recording level."),
    _k("kafka.metrics.reporters", LS, [], "Yammer metrics reporter classes."),
    _k("kafka.metrics.polling.interval.secs", I, 10, "Polling interval of the Yammer metrics reporters.",
       at_least(1)),
    # Quotas
    _k("quota.producer.default", L, LONG_MAX, "Deprecated default produce quota per client id, bytes/s.",
       at_least(1)),
    _k("quota.consumer.default", L, LONG_MAX, "Deprecated default fetch quota per client id, bytes/s.", at_least(1)),
    _k("quota.window.num", I, 11, "Samples kept for client quotas.", at_least(1)),
    _k("replication.quota.window.num", I, 11, "Samples kept for replication quotas.", at_least(1)),
    _k("alter.log.dirs.replication.quota.window.num", I, 11, "Samples kept for log-dir move quotas.", at_least(1)),
    _k("controller.quota.window.num", I, 11, "Samples kept for controller mutation quotas.", at_least(1)),
    _k("quota.window.size.seconds", I, 1, "Length of one client quota sample.", at_least(1)),
    _k("replication.quota.window.size.seconds", I, 1, "Length of one replication quota sample.", at_least(1)),
    _k("alter.log.dirs.replication.quota.window.size.seconds", I, 1, "Length of one log-dir move quota sample.",
       at_least(1)),
    _k("controller.quota.window.size.seconds", I, 1, "Length of one controller mutation quota sample.", at_least(1)),
    _k("client.quota.callback.class", C, None, "Custom quota callback class."),
    # Security
    _k("connections.max.reauth.ms", L, 0, "Session lifetime after which SASL clients must re-authenticate; 0 never."),
    _k("security.providers", S, None, "Security provider creator classes."),
    _k("principal.builder.class", C, None, "Builds the principal of an authenticated connection.", mode=PB),
    _k("ssl.protocol", S, "TLSv1.3", "TLS protocol used to create the SSL context.", mode=PB),
    _k("ssl.provider", S, None, "Security provider for TLS.", mode=PB),
    _k("ssl.enabled.protocols", LS, ["TLSv1.2", "TLSv1.3"], "TLS protocols accepted.", mode=PB),
    _k("ssl.keystore.type", S, "JKS", "Format of the broker keystore.", mode=PB),
    _k("ssl.keystore.location", S, None, "Broker keystore file.", mode=PB),
    _k("ssl.keystore.password", P, None, "Password of the broker keystore.", mode=PB),
    _k("ssl.key.password", P, None, "Password of the private key in the keystore.", mode=PB),
    _k("ssl.keystore.key", P, None, "Private key given inline (PEM).", mode=PB),
    _k("ssl.keystore.certificate.chain", P, None, "Certificate chain given inline (PEM).", mode=PB),
    _k("ssl.truststore.type", S, "JKS", "Format of the truststore.", mode=PB),
    _k("ssl.truststore.location", S, None, "Truststore file.", mode=PB),
    _k("ssl.truststore.password", P, None, "Password of the truststore.", mode=PB),
    _k("ssl.truststore.certificates", P, None, "Trusted certificates given inline (PEM).", mode=PB),
    _k("ssl.keymanager.algorithm", S, "SunX509", "Key manager algorithm.", mode=PB),
    _k("ssl.trustmanager.algorithm", S, "PKIX", "Trust manager algorithm.", mode=PB),
    _k("ssl.endpoint.identification.algorithm", S, "https", "Check the peer's host name against its certificate "
       "(https) or not (empty).", mode=PB),
    _k("ssl.secure.random.implementation", S, None, "SecureRandom implementation for TLS.", mode=PB),
    _k("ssl.client.auth", S, "none", "Whether TLS clients must (required), may (requested) or need not (none) "
       "present a certificate.", one_of("required", "requested", "none"), PB),
    _k("ssl.cipher.suites", LS, [], "Cipher suites accepted; empty means the JVM's defaults.", mode=PB),
    _k("ssl.principal.mapping.rules", S, "DEFAULT", "Rules turning certificate names into principal names."),
    _k("ssl.engine.factory.class", C, None, "Custom SSLEngine factory class.", mode=PB),
    _k("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", "SASL mechanism brokers use among themselves.", mode=PB),
    _k("sasl.jaas.config", P, None, "JAAS login context in the format of a JAAS file entry.", mode=PB),
    _k("sasl.enabled.mechanisms", LS, ["GSSAPI"], "SASL mechanisms the broker offers.", mode=PB),
    _k("sasl.server.callback.handler.class", C, None, "SASL server callback handler class."),
    _k("sasl.client.callback.handler.class", C, None, "SASL client callback handler class."),
    _k("sasl.login.class", C, None, "Login implementation class."),
    _k("sasl.login.callback.handler.class", C, None, "Login callback handler class."),
    _k("sasl.kerberos.service.name", S, None, "Kerberos principal name the broker runs as.", mode=PB),
    _k("sasl.kerberos.kinit.cmd", S, "/usr/bin/kinit", "Path of the kinit command.", mode=PB),
    _k("sasl.kerberos.ticket.renew.window.factor", D, 0.8, "Share of the ticket lifetime after which renewal "
       "starts.", mode=PB),
    _k("sasl.kerberos.ticket.renew.jitter", D, 0.05, "Random jitter added to the renewal time.", mode=PB),
    _k("sasl.kerberos.min.time.before.relogin", L, 60000, "Sleep between refresh attempts.", mode=PB),
    _k("sasl.kerberos.principal.to.local.rules", LS, ["DEFAULT"], "Rules turning Kerberos principals into short "
       "names.", mode=PB),
    _k("sasl.login.refresh.window.factor", D, 0.8, "Share of the credential lifetime after which refresh starts.",
       mode=PB),
    _k("sasl.login.refresh.window.jitter", D, 0.05, "Random jitter added to the refresh time.", mode=PB),
    _k("sasl.login.refresh.min.period.seconds", SH, 60, "Least time between credential refreshes.", mode=PB),
    _k("sasl.login.refresh.buffer.seconds", SH, 300, "Time before expiry to refresh credentials.", mode=PB),
    # Delegation tokens
    _k("delegation.token.master.key", P, None, "Key signing delegation tokens; unset disables them."),
    _k("delegation.token.max.lifetime.ms", L, 604800000, "A token cannot be renewed past this age.", at_least(1)),
    _k("delegation.token.expiry.time.ms", L, 86400000, "A token expires unless renewed within this time.",
       at_least(1)),
    _k("delegation.token.expiry.check.interval.ms", L, 3600000, "How often expired tokens are removed.",
       at_least(1)),
    # Password encoding of dynamic configs
    _k("password.encoder.secret", P, None, "Secret encrypting passwords stored as dynamic configs."),
    _k("password.encoder.old.secret", P, None, "Previous secret, used to re-encrypt after a secret change."),
    _k("password.encoder.keyfactory.algorithm", S, None, "SecretKeyFactory algorithm for password encoding."),
    _k("password.encoder.cipher.algorithm", S, "AES/CBC/PKCS5Padding", "Cipher for password encoding."),
    _k("password.encoder.key.length", I, 128, "Key length for password encoding.", at_least(8)),
    _k("password.encoder.iterations", I, 4096, "Iterations for password encoding.", at_least(1024)),
    # KRaft keys: internal in 2.8; kafkalike runs in ZooKeeper mode only.
    _k("process.roles", LS, [], "KRaft roles (broker, controller); must stay empty in ZooKeeper mode.",
       each_one_of("broker", "controller"), internal=True),
    _k("node.id", I, -1, "KRaft node id.", internal=True),
    _k("initial.broker.registration.timeout.ms", I, 60000, "KRaft broker registration timeout.", internal=True),
    _k("broker.heartbeat.interval.ms", I, 2000, "KRaft broker heartbeat interval.", internal=True),
    _k("broker.session.timeout.ms", I, 9000, "KRaft broker session timeout.", internal=True),
    _k("controller.listener.names", S, None, "KRaft controller listener names.", internal=True),
    _k("sasl.mechanism.controller.protocol", S, "GSSAPI", "SASL mechanism towards KRaft controllers.",
       internal=True),
    _k("metadata.log.dir", S, None, "KRaft metadata log directory.", internal=True),
    _k("controller.quorum.voters", LS, [], "KRaft voters as id@host:port.", internal=True),
    _k("controller.quorum.election.timeout.ms", I, 1000, "KRaft election timeout.", internal=True),
    _k("controller.quorum.fetch.timeout.ms", I, 2000, "KRaft fetch timeout.", internal=True),
    _k("controller.quorum.election.backoff.max.ms", I, 1000, "KRaft election backoff cap.", internal=True),
    _k("controller.quorum.append.linger.ms", I, 25, "KRaft append linger.", internal=True),
    _k("controller.quorum.request.timeout.ms", I, 2000, "KRaft request timeout.", internal=True),
    _k("controller.quorum.retry.backoff.ms", I, 20, "KRaft retry backoff.", internal=True),
    # kafkalike's own keys (docs/metrics.md). Internal, as Kafka's internal keys are: known
    # (never reported unknown) and validated, but not listed by DescribeConfigs, which
    # answers with Kafka 2.8's keys only.
    _k("kafkalike.metrics.port", I, -1, "Port of the broker's Prometheus metrics endpoint (/metrics); -1 serves "
       "none, 0 takes any free port.", at_least(-1), internal=True),
    _k("kafkalike.metrics.host", S, None, "Address the metrics endpoint binds; unset means every interface.",
       internal=True),
)

BROKER_CONFIG: dict[str, ConfigKey] = {k.name: k for k in _KEYS}

# Keys that stand for one setting in different units (DynamicBrokerConfig.brokerConfigSynonyms).
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonyms(name: str) -> tuple[str, ...]:
    """All keys that can set `name`'s value, highest precedence first."""
    if name == "log.flush.interval.ms":
        return ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    for group in _SYNONYM_GROUPS:
        if name in group:
            return group
    return (name,)


# Topic-level key -> the broker key whose value is its default (Kafka's TopicConfigSynonyms).
# The time-based ones are resolved through the precedence rules, not read directly.
TOPIC_CONFIG_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "max.message.bytes": "message.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "cleanup.policy": "log.cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type",
    "preallocate": "log.preallocate",
    "message.format.version": "log.message.format.version",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.downconversion.enable": "log.message.downconversion.enable",
}

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


def _listener_prefixed(name: str) -> bool:
    """listener.name.<listener>.<key> (and .<mechanism>.sasl.jaas.config): a known key for one
    listener, as Kafka's listener-prefixed configs."""
    parts = name.split(".", 3)
    if len(parts) < 4 or parts[:2] != ["listener", "name"]:
        return False
    rest = parts[3]
    return rest in BROKER_CONFIG or rest.endswith(".sasl.jaas.config")


# ---------------------------------------------------------------- listeners

@dataclass(frozen=True)
class EndPoint:
    """One listener: name, host ('' = every interface), port, security protocol."""

    listener_name: str
    host: str
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)\Z")


def _csv(text: str) -> list[str]:
    return [part for part in split_list(text) if part]


def parse_protocol_map(text: str, config_name: str = "listener.security.protocol.map") -> dict[str, str]:
    """'NAME:PROTOCOL,...' with names upper-cased (ListenerName.normalised)."""
    result: dict[str, str] = {}
    for pair in _csv(text):
        name, sep, protocol = pair.rpartition(":")
        if not sep or not name.strip():
            raise invalid(config_name, text, f"Error parsing '{pair}': expected NAME:PROTOCOL")
        protocol = protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid security protocol `{protocol}` defined in {config_name}")
        result[name.strip().upper()] = protocol
    return result


def parse_endpoints(text: str, protocol_map: Mapping[str, str], config_name: str = "listeners", *,
                    require_distinct_ports: bool = True) -> list[EndPoint]:
    """CoreUtils.listenerListToEndPoints: parse, map protocols, reject duplicate names and ports."""
    endpoints: list[EndPoint] = []
    for item in _csv(text):
        match = _ENDPOINT.match(item)
        if not match:
            raise invalid(config_name, text, f"Unable to parse {item} to a broker endpoint")
        name, host, port_text = match.group(1).upper(), match.group(2), match.group(3)
        port = int(port_text)
        if not 0 <= port <= 65535:
            raise invalid(config_name, text, f"Port {port} of listener {name} is not between 0 and 65535")
        if name not in protocol_map:
            raise invalid(config_name, text, f"No security protocol defined for listener {name}")
        endpoints.append(EndPoint(name, host, port, protocol_map[name]))
    names = [e.listener_name for e in endpoints]
    if len(set(names)) != len(names):
        raise invalid(config_name, text, "Each listener must have a different name")
    ports = [e.port for e in endpoints if e.port != 0]
    if require_distinct_ports and len(set(ports)) != len(ports):
        raise invalid(config_name, text, "Each listener must have a different port")
    return endpoints


# ---------------------------------------------------------------- loading

def parse_overrides(args: Iterable[str]) -> dict[str, str]:
    """`--override key=value` arguments (CommandLineUtils.parseKeyValueArgs); 'key' alone means ''."""
    result: dict[str, str] = {}
    for arg in args:
        key, _, value = arg.partition("=")
        if key:
            result[key] = value
    return result


@dataclass(frozen=True)
class ConfigEntry:
    """Everything DescribeConfigs reports about one broker key."""

    name: str
    value: str | None
    source: ConfigSource
    is_sensitive: bool
    read_only: bool
    config_type: ConfigType | None      # None: a key Kafka does not know (described as UNKNOWN)
    documentation: str | None
    synonyms: tuple[ConfigSynonym, ...]

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


class KafkaConfig:
    """A broker's parsed, validated static configuration.

    `originals` is what the operator supplied (file, then overrides); `get(name)` is the
    effective value with Kafka's default filled in. Derived settings that Kafka computes
    from several keys (listeners, retention, roll, flush, ZooKeeper chroot) are properties.
    """

    def __init__(self, props: Mapping[str, Any], *, hostname: str | None = None) -> None:
        self.originals: dict[str, Any] = dict(props)
        self.unknown_keys: list[str] = sorted(k for k in props if k not in BROKER_CONFIG
                                              and not _listener_prefixed(k))
        self._hostname = hostname
        self._values = parse_all(_KEYS, props)
        self._protocol_map = parse_protocol_map(self._values["listener.security.protocol.map"])
        self._listeners = self._parse_listeners()
        self._advertised = self._parse_advertised()
        self._validate()
        # Dynamic broker configs (DynamicBrokerConfig): what server.properties said, and the
        # two ZooKeeper levels over it, /config/brokers/<default> and /config/brokers/<id>.
        # `originals` and every value read through this object are the merge of the three.
        self.static_originals: dict[str, Any] = dict(props)
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, str] = {}

    @classmethod
    def load(cls, path: str | Path, overrides: Iterable[str] = (), *,
             hostname: str | None = None) -> "KafkaConfig":
        """server.properties, then `key=value` overrides (later wins), as kafka-server-start.sh."""
        props: dict[str, Any] = properties.load(path)
        props.update(parse_overrides(overrides))
        return cls(props, hostname=hostname)

    # ------------------------------------------------------------ generic access

    def get(self, name: str) -> Any:
        return self._values[name]

    __getitem__ = get

    def source(self, name: str) -> ConfigSource:
        if name in self.dynamic_broker:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self.dynamic_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        return ConfigSource.STATIC_BROKER_CONFIG if name in self.static_originals else ConfigSource.DEFAULT_CONFIG

    def is_default(self, name: str) -> bool:
        return name not in self.originals

    # ------------------------------------------------------------ dynamic configs

    def merged_props(self, default: Mapping[str, str], broker: Mapping[str, str]) -> dict[str, Any]:
        """server.properties overlaid with the dynamic default, then the per-broker configs.

        DynamicBrokerConfig.overrideProps: a key set at a higher level first drops its
        synonyms from what is below, so a dynamic log.retention.ms wins over a static
        log.retention.hours (and a dynamic log.retention.hours over a static log.retention.ms).
        """
        props = dict(self.static_originals)
        for layer in (default, broker):
            for name, value in layer.items():
                for synonym in broker_synonyms(name):
                    props.pop(synonym, None)
                props[name] = value
        return props

    def apply_dynamic(self, default: Mapping[str, str], broker: Mapping[str, str]) -> set[str]:
        """Make the dynamic levels current (KafkaConfig.updateCurrentConfig) and return the
        names whose effective value changed. The merge is parsed and checked as a whole
        first: on a ConfigError nothing changes."""
        candidate = KafkaConfig(self.merged_props(default, broker), hostname=self._hostname)
        changed = {k for k in set(self._values) | set(candidate._values)
                   if self._values.get(k) != candidate._values.get(k)}
        changed |= {k for k in set(self.originals) | set(candidate.originals)
                    if k not in BROKER_CONFIG and self.originals.get(k) != candidate.originals.get(k)}
        self.originals = candidate.originals
        self.unknown_keys = candidate.unknown_keys
        self._values = candidate._values
        self._protocol_map = candidate._protocol_map
        self._listeners = candidate._listeners
        self._advertised = candidate._advertised
        self.dynamic_default = dict(default)
        self.dynamic_broker = dict(broker)
        return changed

    def _synonym_layers(self) -> tuple[tuple[Mapping[str, Any], ConfigSource], ...]:
        return ((self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                (self.static_originals, ConfigSource.STATIC_BROKER_CONFIG))

    def unknown_key_warnings(self) -> list[str]:
        """The lines Kafka logs at WARN for keys it does not know."""
        return [f"The configuration '{k}' was supplied but isn't a known config." for k in self.unknown_keys]

    def values_banner(self) -> str:
        """The 'KafkaConfig values:' block Kafka logs at startup, one '\\tkey = value' per key."""
        lines = ["KafkaConfig values: "]
        for name in sorted(self._values):
            value = self._values[name]
            if value is None:
                shown = "null"
            elif isinstance(value, tuple):
                shown = "[" + ", ".join(value) + "]"
            elif BROKER_CONFIG[name].type is ConfigType.CLASS:
                shown = f"class {value}"
            else:
                shown = str(value) if isinstance(value, Password) else java_string(value) or ""
            lines.append(f"\t{name} = {shown}")
        return "\n".join(lines) + "\n"

    def describe(self, name: str) -> ConfigEntry:
        """One DescribeConfigs entry, built the way Kafka's ConfigHelper builds it.

        The source comes from the synonym list: keys the operator set (static) or Kafka's
        defaults, dropping synonyms ranked above `name` itself. So log.retention.ms reads
        as a null default while only log.retention.hours is set, exactly as in Kafka.
        """
        key = BROKER_CONFIG[name]
        synonyms: list[ConfigSynonym] = []
        for layer, layer_source in self._synonym_layers():
            for synonym in broker_synonyms(name):
                if synonym in layer:
                    raw = None if key.sensitive else java_string(layer[synonym])
                    synonyms.append(ConfigSynonym(synonym, raw, layer_source))
        for synonym in broker_synonyms(name):
            default = BROKER_CONFIG[synonym].default
            if default is not None and default is not NO_DEFAULT:
                raw = None if key.sensitive else java_string(default)
                synonyms.append(ConfigSynonym(synonym, raw, ConfigSource.DEFAULT_CONFIG))
        while synonyms and synonyms[0].name != name:
            synonyms.pop(0)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        value = None if key.sensitive else java_string(self._values[name])
        return ConfigEntry(name, value, source, key.sensitive, key.read_only, key.type, key.doc,
                           tuple(synonyms))

    def describe_all(self) -> list[ConfigEntry]:
        """Every public key, sorted by name, as `kafka-configs.sh --describe --all` lists them."""
        return [self.describe(k.name) for k in sorted(_KEYS, key=lambda k: k.name) if not k.internal]

    def describe_custom(self, name: str, config_type: ConfigType | None = None,
                        documentation: str | None = None) -> ConfigEntry:
        """A key that is not one of KafkaConfig's (a custom key, or a dynamic-only one such
        as leader.replication.throttled.rate, whose type the caller passes): read-only, and
        sensitive when its type is unknown, as Kafka's ConfigHelper describes it."""
        sensitive = config_type is None or config_type is ConfigType.PASSWORD
        synonyms = tuple(ConfigSynonym(name, None if sensitive else java_string(layer[name]), source)
                         for layer, source in self._synonym_layers() if name in layer)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        value = self.originals.get(name)
        return ConfigEntry(name, None if sensitive or value is None else java_string(value), source, sensitive,
                           True, config_type, documentation, synonyms)

    # ------------------------------------------------------------ ZooKeeper

    @property
    def zookeeper_connect(self) -> str:
        return self._values["zookeeper.connect"]

    @property
    def zk_hosts(self) -> str:
        """The connect string without its chroot: what the ZooKeeper client dials."""
        return self._split_zk()[0]

    @property
    def zk_chroot(self) -> str | None:
        """The chroot path ('/kafka') or None; Kafka creates it if missing."""
        return self._split_zk()[1]

    def _split_zk(self) -> tuple[str, str | None]:
        text = self.zookeeper_connect
        slash = text.find("/")
        if slash < 0:
            return text, None
        chroot = text[slash:]
        return text[:slash], (None if chroot == "/" else chroot)

    @property
    def zk_session_timeout_ms(self) -> int:
        return self._values["zookeeper.session.timeout.ms"]

    @property
    def zk_connection_timeout_ms(self) -> int:
        value = self._values["zookeeper.connection.timeout.ms"]
        return self.zk_session_timeout_ms if value is None else value

    @property
    def zk_max_in_flight_requests(self) -> int:
        return self._values["zookeeper.max.in.flight.requests"]

    # ------------------------------------------------------------ identity

    @property
    def broker_id(self) -> int:
        return self._values["broker.id"]

    @property
    def rack(self) -> str | None:
        return self._values["broker.rack"]

    @property
    def inter_broker_protocol_version(self) -> str:
        """Canonical IBP, e.g. '2.8-IV1' even when the file says '2.8'."""
        return resolve_api_version(self._values["inter.broker.protocol.version"])

    @property
    def log_message_format_version(self) -> str:
        return resolve_api_version(self._values["log.message.format.version"])

    # ------------------------------------------------------------ listeners

    def _parse_listeners(self) -> list[EndPoint]:
        text = self._values["listeners"]
        if text is None:
            text = f"PLAINTEXT://{self._values['host.name']}:{self._values['port']}"
        return parse_endpoints(text, self._protocol_map, "listeners")

    def _parse_advertised(self) -> list[EndPoint]:
        text = self._values["advertised.listeners"]
        if text is None:
            host, port = self._values["advertised.host.name"], self._values["advertised.port"]
            if host is None and port is None:
                return list(self._listeners)
            host = self._values["host.name"] if host is None else host
            port = self._values["port"] if port is None else port
            text = f"PLAINTEXT://{host}:{port}"
        return parse_endpoints(text, self._protocol_map, "advertised.listeners", require_distinct_ports=False)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocol_map)

    @property
    def listeners(self) -> list[EndPoint]:
        """Sockets to bind; a '' host means every interface."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[EndPoint]:
        """What the broker registers in ZooKeeper: '' hosts become this machine's host name."""
        hostname = self._hostname or socket.gethostname()
        return [e if e.host else EndPoint(e.listener_name, hostname, e.port, e.security_protocol)
                for e in self._advertised]

    @property
    def inter_broker_listener_name(self) -> str:
        name = self._values["inter.broker.listener.name"]
        if name is not None:
            return name.upper()
        return self._values["security.inter.broker.protocol"].upper()

    @property
    def inter_broker_security_protocol(self) -> str:
        if self._values["inter.broker.listener.name"] is None:
            return self._values["security.inter.broker.protocol"].upper()
        return self._protocol_map[self.inter_broker_listener_name]

    @property
    def control_plane_listener_name(self) -> str | None:
        name = self._values["control.plane.listener.name"]
        return None if name is None else name.upper()

    # ------------------------------------------------------------ log settings

    @property
    def log_dirs(self) -> list[str]:
        """log.dirs if set, else log.dir, split on commas."""
        text = self._values["log.dirs"]
        return _csv(self._values["log.dir"] if text is None else text)

    @property
    def log_retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours; any negative result is -1 (keep forever)."""
        ms = self._values["log.retention.ms"]
        if ms is None:
            minutes = self._values["log.retention.minutes"]
            ms = (minutes * 60_000 if minutes is not None
                  else self._values["log.retention.hours"] * 3_600_000)
        return -1 if ms < 0 else ms

    @property
    def log_roll_ms(self) -> int:
        ms = self._values["log.roll.ms"]
        return self._values["log.roll.hours"] * 3_600_000 if ms is None else ms

    @property
    def log_roll_jitter_ms(self) -> int:
        ms = self._values["log.roll.jitter.ms"]
        return self._values["log.roll.jitter.hours"] * 3_600_000 if ms is None else ms

    @property
    def log_flush_interval_ms(self) -> int:
        ms = self._values["log.flush.interval.ms"]
        return self._values["log.flush.scheduler.interval.ms"] if ms is None else ms

    def log_config_defaults(self) -> dict[str, Any]:
        """Topic-level defaults this broker gives every topic (KafkaServer.copyKafkaConfigToLog).

        Keys are topic config names; values are parsed (ints, bools, floats, tuples for
        lists), ready for LogConfig in kafkalike.storage.config.
        """
        v = self._values
        out: dict[str, Any] = {}
        for topic_key, broker_key in TOPIC_CONFIG_SYNONYMS.items():
            out[topic_key] = v[broker_key]
        out["segment.ms"] = self.log_roll_ms
        out["segment.jitter.ms"] = self.log_roll_jitter_ms
        out["retention.ms"] = self.log_retention_ms
        out["flush.ms"] = self.log_flush_interval_ms
        out["leader.replication.throttled.replicas"] = ()
        out["follower.replication.throttled.replicas"] = ()
        return out

    # ------------------------------------------------------------ cross-key rules

    def _require(self, ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(message)

    def _validate(self) -> None:
        """KafkaConfig.validateValues: rules that involve more than one key."""
        v = self._values
        self._require(not v["process.roles"], "process.roles must be empty: kafkalike runs in ZooKeeper mode only")
        self._require(v["zookeeper.connect"] != "", "zookeeper.connect must not be empty")
        hosts, chroot = self._split_zk()
        self._require(bool(hosts.strip()), "zookeeper.connect must name at least one host:port")
        if chroot is not None:
            self._require(not chroot.endswith("/") and "//" not in chroot,
                          f"Invalid chroot path {chroot} in zookeeper.connect")
        if v["broker.id.generation.enable"]:
            self._require(-1 <= v["broker.id"] <= v["reserved.broker.max.id"],
                          "broker.id must be equal or greater than -1 and not greater than reserved.broker.max.id")
        else:
            self._require(v["broker.id"] >= 0, "broker.id must be equal or greater than 0")
        self._require(self.log_roll_ms >= 1, "log.roll.ms must be equal or greater than 1")
        self._require(self.log_roll_jitter_ms >= 0, "log.roll.jitter.ms must be equal or greater than 0")
        self._require(self.log_retention_ms >= 1 or self.log_retention_ms == -1,
                      "log.retention.ms must be unlimited (-1) or, equal or greater than 1")
        self._require(bool(self.log_dirs), "At least one log directory must be defined via log.dirs or log.dir.")
        threads = v["log.cleaner.threads"]
        self._require(threads == 0 or v["log.cleaner.dedupe.buffer.size"] / threads > 1024 * 1024,
                      "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
        self._require(v["replica.fetch.wait.max.ms"] <= v["replica.socket.timeout.ms"],
                      "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent "
                      "unnecessary socket timeouts")
        self._require(v["replica.fetch.wait.max.ms"] <= v["replica.lag.time.max.ms"],
                      "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms "
                      "to prevent frequent changes in ISR")
        self._require(-1 <= v["offsets.commit.required.acks"] <= v["offsets.topic.replication.factor"],
                      "offsets.commit.required.acks must be greater or equal -1 and less or equal to "
                      "offsets.topic.replication.factor")
        self._require(v["compression.type"] in COMPRESSION_TYPES,
                      f"compression.type : {v['compression.type']} is not valid. Valid options are "
                      + ",".join(COMPRESSION_TYPES))
        magic = record_version(v["log.message.format.version"])
        self._require(magic <= record_version(v["inter.broker.protocol.version"]),
                      f"log.message.format.version {v['log.message.format.version']} can only be used when "
                      f"inter.broker.protocol.version is set to version {_first_version_writing(magic)} "
                      "or higher")
        self._validate_listener_names()
        self._require(v["queued.max.request.bytes"] <= 0
                      or v["queued.max.request.bytes"] >= v["socket.request.max.bytes"],
                      "queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
        overrides = self._connection_overrides()
        self._require(v["max.connections.per.ip"] != 0 or bool(overrides),
                      "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                      "property is set.")
        if v["connections.max.idle.ms"] >= 0:
            self._require(v["connection.failed.authentication.delay.ms"] < v["connections.max.idle.ms"],
                          f"connection.failed.authentication.delay.ms="
                          f"{v['connection.failed.authentication.delay.ms']} should always be less than "
                          f"connections.max.idle.ms={v['connections.max.idle.ms']} to prevent failed "
                          "authentication responses from timing out")

    def _validate_listener_names(self) -> None:
        v = self._values
        if v["inter.broker.listener.name"] is not None:
            self._require("security.inter.broker.protocol" not in self.originals,
                          "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
            self._require(self.inter_broker_listener_name in self._protocol_map,
                          f"Listener with name {self.inter_broker_listener_name} defined in "
                          "inter.broker.listener.name not found in listener.security.protocol.map.")
        else:
            self._require(self.inter_broker_listener_name in SECURITY_PROTOCOLS,
                          f"Invalid security protocol `{v['security.inter.broker.protocol']}` defined in "
                          "security.inter.broker.protocol")
        advertised = [e.listener_name for e in self._advertised]
        names = {e.listener_name for e in self._listeners}
        self._require(self.inter_broker_listener_name in advertised,
                      "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
                      f"The valid options based on currently configured listeners are {','.join(advertised)}")
        self._require(set(advertised) <= names,
                      "advertised.listeners listener names must be equal to or a subset of the ones defined in "
                      f"listeners. Found {','.join(advertised)}. The valid options based on the current "
                      f"configuration are {','.join(sorted(names))}")
        self._require(all(e.host != "0.0.0.0" for e in self._advertised),
                      "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                      "Use a routable IP address.")
        control = self.control_plane_listener_name
        if control is not None:
            self._require(control in advertised,
                          "control.plane.listener.name must be a listener name defined in advertised.listeners. "
                          f"The valid options based on currently configured listeners are {','.join(advertised)}")
            self._require(control != self.inter_broker_listener_name,
                          "control.plane.listener.name, when defined, should have a different value from the "
                          f"inter broker listener name. Currently they both have the value {control}")

    def _connection_overrides(self) -> dict[str, int]:
        text = self._values["max.connections.per.ip.overrides"]
        result: dict[str, int] = {}
        for pair in _csv(text):
            host, sep, count = pair.rpartition(":")
            if not sep or not host or not INTEGER_PATTERN.match(count.strip()):
                raise ConfigError(f"Error parsing configuration property 'max.connections.per.ip.overrides': "
                                  f"invalid entry '{pair}'")
            result[host.strip()] = int(count)
        return result

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        return self._connection_overrides()


def _first_version_writing(magic: int) -> str:
    """ApiVersion.minSupportedFor(recordVersion).shortVersion: '0.10.0' for magic 1."""
    return next(v.split("-")[0] for v in API_VERSIONS if record_version(v) == magic)


def known_key_names(include_internal: bool = True) -> Sequence[str]:
    """Sorted broker key names (KafkaConfig.configNames)."""
    return sorted(k.name for k in _KEYS if include_internal or not k.internal)
