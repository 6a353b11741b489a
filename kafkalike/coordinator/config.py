"""The group coordinator's settings, read once from the broker's keys.

A plain dataclass rather than the KafkaConfig itself, so the state machine can be
driven in tests with a handful of numbers and no properties file.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkalike.common.topics import OFFSETS_TOPIC

__all__ = ["INT32_MAX", "OFFSETS_TOPIC", "CoordinatorConfig"]

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class CoordinatorConfig:
    offsets_topic_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104857600
    offsets_topic_compression: int = 0          # codec id of commit batches
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_group_size: int = INT32_MAX
    max_metadata_size: int = 4096
    load_buffer_size: int = 5242880
    retention_ms: int = 10080 * 60 * 1000
    retention_check_interval_ms: int = 600000
    commit_timeout_ms: int = 5000
    commit_required_acks: int = -1

    @classmethod
    def from_kafka_config(cls, config) -> "CoordinatorConfig":
        get = config.get
        return cls(
            offsets_topic_partitions=get("offsets.topic.num.partitions"),
            offsets_topic_replication_factor=get("offsets.topic.replication.factor"),
            offsets_topic_segment_bytes=get("offsets.topic.segment.bytes"),
            offsets_topic_compression=get("offsets.topic.compression.codec"),
            min_session_timeout_ms=get("group.min.session.timeout.ms"),
            max_session_timeout_ms=get("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms"),
            max_group_size=get("group.max.size"),
            max_metadata_size=get("offset.metadata.max.bytes"),
            load_buffer_size=get("offsets.load.buffer.size"),
            retention_ms=get("offsets.retention.minutes") * 60 * 1000,
            retention_check_interval_ms=get("offsets.retention.check.interval.ms"),
            commit_timeout_ms=get("offsets.commit.timeout.ms"),
            commit_required_acks=get("offsets.commit.required.acks"),
        )

    def offsets_topic_configs(self) -> dict[str, str]:
        """What Kafka sets on __consumer_offsets when it creates it."""
        return {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.offsets_topic_segment_bytes),
            "compression.type": "producer",
        }
