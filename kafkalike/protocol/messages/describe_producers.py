"""DescribeProducers (API key 61): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_PRODUCERS_REQUEST = Message(
    'DescribeProducersRequest', 'request', valid='0', flexible='0+',
    api_key=61, listeners=('zkBroker', 'broker'),
    fields=[
        F('topics', '[]TopicRequest', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partition_indexes', '[]int32', '0+'),
        ]),
    ])
DescribeProducersRequest = build_classes(DESCRIBE_PRODUCERS_REQUEST)

DESCRIBE_PRODUCERS_RESPONSE = Message(
    'DescribeProducersResponse', 'response', valid='0', flexible='0+',
    api_key=61,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('topics', '[]TopicResponse', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]PartitionResponse', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+', default=None),
                F('active_producers', '[]ProducerState', '0+', fields=[
                    F('producer_id', 'int64', '0+'),
                    F('producer_epoch', 'int32', '0+'),
                    F('last_sequence', 'int32', '0+', default=-1),
                    F('last_timestamp', 'int64', '0+', default=-1),
                    F('coordinator_epoch', 'int32', '0+'),
                    F('current_txn_start_offset', 'int64', '0+', default=-1),
                ]),
            ]),
        ]),
    ])
DescribeProducersResponse = build_classes(DESCRIBE_PRODUCERS_RESPONSE)
