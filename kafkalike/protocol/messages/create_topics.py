"""CreateTopics (API key 19): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

CREATE_TOPICS_REQUEST = Message(
    'CreateTopicsRequest', 'request', valid='0-7', flexible='5+',
    api_key=19, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('topics', '[]CreatableTopic', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('num_partitions', 'int32', '0+'),
            F('replication_factor', 'int16', '0+'),
            F('assignments', '[]CreatableReplicaAssignment', '0+', fields=[
                F('partition_index', 'int32', '0+', map_key=True),
                F('broker_ids', '[]int32', '0+', entity_type='brokerId'),
            ]),
            F('configs', '[]CreateableTopicConfig', '0+', fields=[
                F('name', 'string', '0+', map_key=True),
                F('value', 'string', '0+', nullable='0+'),
            ]),
        ]),
        F('timeout_ms', 'int32', '0+', default=60000),
        F('validate_only', 'bool', '1+', default=False),
    ])
CreateTopicsRequest = build_classes(CREATE_TOPICS_REQUEST)

CREATE_TOPICS_RESPONSE = Message(
    'CreateTopicsResponse', 'response', valid='0-7', flexible='5+',
    api_key=19,
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('topics', '[]CreatableTopicResult', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('topic_id', 'uuid', '7+', ignorable=True),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '1+', nullable='0+', ignorable=True),
            F('topic_config_error_code', 'int16', '5+', tagged='5+', tag=0, ignorable=True),
            F('num_partitions', 'int32', '5+', default=-1, ignorable=True),
            F('replication_factor', 'int16', '5+', default=-1, ignorable=True),
            F('configs', '[]CreatableTopicConfigs', '5+', nullable='5+', ignorable=True, fields=[
                F('name', 'string', '5+'),
                F('value', 'string', '5+', nullable='5+'),
                F('read_only', 'bool', '5+'),
                F('config_source', 'int8', '5+', default=-1, ignorable=True),
                F('is_sensitive', 'bool', '5+'),
            ]),
        ]),
    ])
CreateTopicsResponse = build_classes(CREATE_TOPICS_RESPONSE)
