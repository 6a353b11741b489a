"""DescribeGroups (API key 15): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_GROUPS_REQUEST = Message(
    'DescribeGroupsRequest', 'request', valid='0-5', flexible='5+',
    api_key=15, listeners=('zkBroker', 'broker'),
    fields=[
        F('groups', '[]string', '0+', entity_type='groupId'),
        F('include_authorized_operations', 'bool', '3+'),
    ])
DescribeGroupsRequest = build_classes(DESCRIBE_GROUPS_REQUEST)

DESCRIBE_GROUPS_RESPONSE = Message(
    'DescribeGroupsResponse', 'response', valid='0-5', flexible='5+',
    api_key=15,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('groups', '[]DescribedGroup', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('group_id', 'string', '0+', entity_type='groupId'),
            F('group_state', 'string', '0+'),
            F('protocol_type', 'string', '0+'),
            F('protocol_data', 'string', '0+'),
            F('members', '[]DescribedGroupMember', '0+', fields=[
                F('member_id', 'string', '0+'),
                F('group_instance_id', 'string', '4+', nullable='4+', default=None, ignorable=True),
                F('client_id', 'string', '0+'),
                F('client_host', 'string', '0+'),
                F('member_metadata', 'bytes', '0+'),
                F('member_assignment', 'bytes', '0+'),
            ]),
            F('authorized_operations', 'int32', '3+', default=-2147483648),
        ]),
    ])
DescribeGroupsResponse = build_classes(DESCRIBE_GROUPS_RESPONSE)
