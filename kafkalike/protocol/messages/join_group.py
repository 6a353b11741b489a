"""JoinGroup (API key 11): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

JOIN_GROUP_REQUEST = Message(
    'JoinGroupRequest', 'request', valid='0-7', flexible='6+',
    api_key=11, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('session_timeout_ms', 'int32', '0+'),
        F('rebalance_timeout_ms', 'int32', '1+', default=-1, ignorable=True),
        F('member_id', 'string', '0+'),
        F('group_instance_id', 'string', '5+', nullable='5+', default=None),
        F('protocol_type', 'string', '0+'),
        F('protocols', '[]JoinGroupRequestProtocol', '0+', fields=[
            F('name', 'string', '0+', map_key=True),
            F('metadata', 'bytes', '0+'),
        ]),
    ])
JoinGroupRequest = build_classes(JOIN_GROUP_REQUEST)

JOIN_GROUP_RESPONSE = Message(
    'JoinGroupResponse', 'response', valid='0-7', flexible='6+',
    api_key=11,
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('generation_id', 'int32', '0+', default=-1),
        F('protocol_type', 'string', '7+', nullable='7+', default=None, ignorable=True),
        F('protocol_name', 'string', '0+', nullable='7+'),
        F('leader', 'string', '0+'),
        F('member_id', 'string', '0+'),
        F('members', '[]JoinGroupResponseMember', '0+', fields=[
            F('member_id', 'string', '0+'),
            F('group_instance_id', 'string', '5+', nullable='5+', default=None),
            F('metadata', 'bytes', '0+'),
        ]),
    ])
JoinGroupResponse = build_classes(JOIN_GROUP_RESPONSE)
