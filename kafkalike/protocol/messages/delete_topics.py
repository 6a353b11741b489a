"""DeleteTopics (API key 20): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DELETE_TOPICS_REQUEST = Message(
    'DeleteTopicsRequest', 'request', valid='0-6', flexible='4+',
    api_key=20, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('topics', '[]DeleteTopicState', '6+', fields=[
            F('name', 'string', '6+', nullable='6+'),
            F('topic_id', 'uuid', '6+'),
        ]),
        F('topic_names', '[]string', '0-5', ignorable=True, entity_type='topicName'),
        F('timeout_ms', 'int32', '0+'),
    ])
DeleteTopicsRequest = build_classes(DELETE_TOPICS_REQUEST)

DELETE_TOPICS_RESPONSE = Message(
    'DeleteTopicsResponse', 'response', valid='0-6', flexible='4+',
    api_key=20,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('responses', '[]DeletableTopicResult', '0+', fields=[
            F('name', 'string', '0+', nullable='6+', map_key=True, entity_type='topicName'),
            F('topic_id', 'uuid', '6+', ignorable=True),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '5+', nullable='5+', default=None, ignorable=True),
        ]),
    ])
DeleteTopicsResponse = build_classes(DELETE_TOPICS_RESPONSE)
