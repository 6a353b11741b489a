"""Heartbeat (API key 12): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

HEARTBEAT_REQUEST = Message(
    'HeartbeatRequest', 'request', valid='0-4', flexible='4+',
    api_key=12, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('generation_id', 'int32', '0+'),
        F('member_id', 'string', '0+'),
        F('group_instance_id', 'string', '3+', nullable='3+', default=None),
    ])
HeartbeatRequest = build_classes(HEARTBEAT_REQUEST)

HEARTBEAT_RESPONSE = Message(
    'HeartbeatResponse', 'response', valid='0-4', flexible='4+',
    api_key=12,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
    ])
HeartbeatResponse = build_classes(HEARTBEAT_RESPONSE)
