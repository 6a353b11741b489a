"""LeaveGroup (API key 13): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

LEAVE_GROUP_REQUEST = Message(
    'LeaveGroupRequest', 'request', valid='0-4', flexible='4+',
    api_key=13, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('member_id', 'string', '0-2'),
        F('members', '[]MemberIdentity', '3+', fields=[
            F('member_id', 'string', '3+'),
            F('group_instance_id', 'string', '3+', nullable='3+', default=None),
        ]),
    ])
LeaveGroupRequest = build_classes(LEAVE_GROUP_REQUEST)

LEAVE_GROUP_RESPONSE = Message(
    'LeaveGroupResponse', 'response', valid='0-4', flexible='4+',
    api_key=13,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('members', '[]MemberResponse', '3+', fields=[
            F('member_id', 'string', '3+'),
            F('group_instance_id', 'string', '3+', nullable='3+'),
            F('error_code', 'int16', '3+'),
        ]),
    ])
LeaveGroupResponse = build_classes(LEAVE_GROUP_RESPONSE)
