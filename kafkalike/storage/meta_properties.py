"""`meta.properties` in each log dir: which broker and cluster the directory belongs to.

Kafka writes it on first start (`version=0`, `broker.id`, `cluster.id`) and refuses to
start when a dir's ids disagree with its config or the ZooKeeper cluster id. The file is
a Java properties file, read and written with kafkalike.properties (atomically here).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kafkalike import properties
from kafkalike.storage import layout
from kafkalike.storage.checkpoints import write_atomically
from kafkalike.storage.errors import CorruptCheckpointError

@dataclass(frozen=True, slots=True)
class MetaProperties:
    broker_id: int
    cluster_id: str | None = None
    version: int = 0


# One java.util.Properties reader and writer serves the broker config, the tools and
# this file (kafkalike.properties).
parse_properties = properties.loads


def format_properties(props: dict[str, str], comment: str | None = None) -> str:
    return properties.dumps(props, comment)


def read_meta_properties(log_dir: str) -> MetaProperties | None:
    """The dir's meta.properties, None when absent; CorruptCheckpointError if unusable."""
    path = os.path.join(log_dir, layout.META_PROPERTIES_FILE)
    try:
        with open(path, encoding="latin-1") as handle:
            props = parse_properties(handle.read())
    except FileNotFoundError:
        return None
    try:
        version = int(props["version"])
    except (KeyError, ValueError):
        raise CorruptCheckpointError(f"{path} has no valid version") from None
    if version != 0:
        raise CorruptCheckpointError(f"{path} has unsupported version {version}")
    try:
        broker_id = int(props["broker.id"])
    except (KeyError, ValueError):
        raise CorruptCheckpointError(f"{path} has no valid broker.id") from None
    return MetaProperties(broker_id=broker_id, cluster_id=props.get("cluster.id"), version=version)


def write_meta_properties(log_dir: str, meta: MetaProperties) -> None:
    props = {"version": str(meta.version), "broker.id": str(meta.broker_id)}
    if meta.cluster_id is not None:
        props["cluster.id"] = meta.cluster_id
    write_atomically(os.path.join(log_dir, layout.META_PROPERTIES_FILE),
                     format_properties(props, comment=""))
