"""ListGroups (API key 16): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

LIST_GROUPS_REQUEST = Message(
    'ListGroupsRequest', 'request', valid='0-4', flexible='3+',
    api_key=16, listeners=('zkBroker', 'broker'),
    fields=[
        F('states_filter', '[]string', '4+'),
    ])
ListGroupsRequest = build_classes(LIST_GROUPS_REQUEST)

LIST_GROUPS_RESPONSE = Message(
    'ListGroupsResponse', 'response', valid='0-4', flexible='3+',
    api_key=16,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('groups', '[]ListedGroup', '0+', fields=[
            F('group_id', 'string', '0+', entity_type='groupId'),
            F('protocol_type', 'string', '0+'),
            F('group_state', 'string', '4+', ignorable=True),
        ]),
    ])
ListGroupsResponse = build_classes(LIST_GROUPS_RESPONSE)
