"""SyncGroup (API key 14): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

SYNC_GROUP_REQUEST = Message(
    'SyncGroupRequest', 'request', valid='0-5', flexible='4+',
    api_key=14, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('generation_id', 'int32', '0+'),
        F('member_id', 'string', '0+'),
        F('group_instance_id', 'string', '3+', nullable='3+', default=None),
        F('protocol_type', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('protocol_name', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('assignments', '[]SyncGroupRequestAssignment', '0+', fields=[
            F('member_id', 'string', '0+'),
            F('assignment', 'bytes', '0+'),
        ]),
    ])
SyncGroupRequest = build_classes(SYNC_GROUP_REQUEST)

SYNC_GROUP_RESPONSE = Message(
    'SyncGroupResponse', 'response', valid='0-5', flexible='4+',
    api_key=14,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('protocol_type', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('protocol_name', 'string', '5+', nullable='5+', default=None, ignorable=True),
        F('assignment', 'bytes', '0+'),
    ])
SyncGroupResponse = build_classes(SYNC_GROUP_RESPONSE)
