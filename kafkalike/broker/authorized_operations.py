"""What a client may do with a resource, as the authorized-operations bit fields say.

Metadata (topics, cluster), DescribeCluster and DescribeGroups can report, per
resource, a 32-bit field with bit N set when ACL operation code N is allowed. Without
an authorizer Kafka 2.8 allows every operation the resource type supports
(AclEntry.supportedOperations), so the field depends on the type alone.
"""
from __future__ import annotations

from enum import IntEnum


class AclOperation(IntEnum):
    """Kafka's AclOperation codes (ALL and ANY are never reported)."""
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


O = AclOperation
SUPPORTED_OPERATIONS = {
    "topic": (O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    "group": (O.READ, O.DESCRIBE, O.DELETE),
    "cluster": (O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE, O.ALTER,
                O.DESCRIBE),
}


def bit_field(operations) -> int:
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field


TOPIC_AUTHORIZED_OPERATIONS = bit_field(SUPPORTED_OPERATIONS["topic"])
GROUP_AUTHORIZED_OPERATIONS = bit_field(SUPPORTED_OPERATIONS["group"])
CLUSTER_AUTHORIZED_OPERATIONS = bit_field(SUPPORTED_OPERATIONS["cluster"])
