"""The transaction coordinator's settings, read once from the broker's keys."""
from __future__ import annotations

from dataclasses import dataclass

from kafkalike.common.topics import TRANSACTION_STATE_TOPIC

__all__ = ["TRANSACTION_STATE_TOPIC", "TransactionConfig"]


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id_expiration_ms: int = 604800000
    transaction_max_timeout_ms: int = 900000
    transaction_log_num_partitions: int = 50
    transaction_log_replication_factor: int = 3
    transaction_log_segment_bytes: int = 104857600
    transaction_log_load_buffer_size: int = 5242880
    transaction_log_min_isr: int = 2
    abort_timed_out_transactions_interval_ms: int = 10000
    remove_expired_transactional_ids_interval_ms: int = 3600000
    request_timeout_ms: int = 30000

    @classmethod
    def from_kafka_config(cls, config) -> "TransactionConfig":
        get = config.get
        return cls(
            transactional_id_expiration_ms=get("transactional.id.expiration.ms"),
            transaction_max_timeout_ms=get("transaction.max.timeout.ms"),
            transaction_log_num_partitions=get("transaction.state.log.num.partitions"),
            transaction_log_replication_factor=get("transaction.state.log.replication.factor"),
            transaction_log_segment_bytes=get("transaction.state.log.segment.bytes"),
            transaction_log_load_buffer_size=get("transaction.state.log.load.buffer.size"),
            transaction_log_min_isr=get("transaction.state.log.min.isr"),
            abort_timed_out_transactions_interval_ms=get(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            remove_expired_transactional_ids_interval_ms=get(
                "transaction.remove.expired.transaction.cleanup.interval.ms"),
            request_timeout_ms=get("request.timeout.ms"),
        )

    def transaction_topic_configs(self) -> dict[str, str]:
        """What Kafka enforces on __transaction_state when it creates it."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(self.transaction_log_min_isr),
            "segment.bytes": str(self.transaction_log_segment_bytes),
            "unclean.leader.election.enable": "false",
        }
