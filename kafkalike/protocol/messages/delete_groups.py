"""DeleteGroups (API key 42): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DELETE_GROUPS_REQUEST = Message(
    'DeleteGroupsRequest', 'request', valid='0-2', flexible='2+',
    api_key=42, listeners=('zkBroker', 'broker'),
    fields=[
        F('groups_names', '[]string', '0+', entity_type='groupId'),
    ])
DeleteGroupsRequest = build_classes(DELETE_GROUPS_REQUEST)

DELETE_GROUPS_RESPONSE = Message(
    'DeleteGroupsResponse', 'response', valid='0-2', flexible='2+',
    api_key=42,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]DeletableGroupResult', '0+', fields=[
            F('group_id', 'string', '0+', map_key=True, entity_type='groupId'),
            F('error_code', 'int16', '0+'),
        ]),
    ])
DeleteGroupsResponse = build_classes(DELETE_GROUPS_RESPONSE)
