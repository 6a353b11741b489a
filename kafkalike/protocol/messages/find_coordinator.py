"""FindCoordinator (API key 10): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

FIND_COORDINATOR_REQUEST = Message(
    'FindCoordinatorRequest', 'request', valid='0-3', flexible='3+',
    api_key=10, listeners=('zkBroker', 'broker'),
    fields=[
        F('key', 'string', '0+'),
        F('key_type', 'int8', '1+', default=0),
    ])
FindCoordinatorRequest = build_classes(FIND_COORDINATOR_REQUEST)

FIND_COORDINATOR_RESPONSE = Message(
    'FindCoordinatorResponse', 'response', valid='0-3', flexible='3+',
    api_key=10,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '1+', nullable='1+', ignorable=True),
        F('node_id', 'int32', '0+', entity_type='brokerId'),
        F('host', 'string', '0+'),
        F('port', 'int32', '0+'),
    ])
FindCoordinatorResponse = build_classes(FIND_COORDINATOR_RESPONSE)
