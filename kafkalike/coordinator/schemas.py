"""Record keys and values of __consumer_offsets, as Kafka 2.8 declares them.

Each is written with an int16 version prefix (see kafkalike/coordinator/records.py)."""
from kafkalike.protocol.schema import F, Message, build_classes

_MEMBER_METADATA = [
    F('member_id', 'string', '0+'),
    F('group_instance_id', 'string', '3+', nullable='3+', default=None, ignorable=True),
    F('client_id', 'string', '0+'),
    F('client_host', 'string', '0+'),
    F('rebalance_timeout', 'int32', '1+', default=-1, ignorable=True),
    F('session_timeout', 'int32', '0+'),
    F('subscription', 'bytes', '0+'),
    F('assignment', 'bytes', '0+'),
]

OFFSET_COMMIT_KEY = Message(
    'OffsetCommitKey', 'data', valid='0-1', flexible='none',
    fields=[
        F('group', 'string', '0-1'),
        F('topic', 'string', '0-1'),
        F('partition', 'int32', '0-1'),
    ])
OffsetCommitKey = build_classes(OFFSET_COMMIT_KEY)

OFFSET_COMMIT_VALUE = Message(
    'OffsetCommitValue', 'data', valid='0-4', flexible='4+',
    fields=[
        F('offset', 'int64', '0+'),
        F('leader_epoch', 'int32', '3+', default=-1, ignorable=True),
        F('metadata', 'string', '0+'),
        F('commit_timestamp', 'int64', '0+'),
        F('expire_timestamp', 'int64', '1', default=-1, ignorable=True),
    ])
OffsetCommitValue = build_classes(OFFSET_COMMIT_VALUE)

GROUP_METADATA_KEY = Message(
    'GroupMetadataKey', 'data', valid='2', flexible='none',
    fields=[
        F('group', 'string', '2'),
    ])
GroupMetadataKey = build_classes(GROUP_METADATA_KEY)

GROUP_METADATA_VALUE = Message(
    'GroupMetadataValue', 'data', valid='0-4', flexible='4+',
    fields=[
        F('protocol_type', 'string', '0+'),
        F('generation', 'int32', '0+'),
        F('protocol', 'string', '0+', nullable='0+'),
        F('leader', 'string', '0+', nullable='0+'),
        F('current_state_timestamp', 'int64', '2+', default=-1, ignorable=True),
        F('members', '[]MemberMetadata', '0+', fields=_MEMBER_METADATA),
    ])
GroupMetadataValue = build_classes(GROUP_METADATA_VALUE)
