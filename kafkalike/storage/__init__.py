"""Kafka 2.8's on-disk log: segments, indexes, checkpoints, recovery, retention (docs/storage.md)."""
from .config import LogConfig, log_config_from_broker
from .layout import TopicPartition
from .log import Log, LogSlice
from .manager import LogManager
from .validation import AppendOrigin, LogAppendInfo

__all__ = ["AppendOrigin", "Log", "LogAppendInfo", "LogConfig", "LogManager", "LogSlice",
           "TopicPartition", "log_config_from_broker"]
