"""AddPartitionsToTxn (API key 24): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ADD_PARTITIONS_TO_TXN_REQUEST = Message(
    'AddPartitionsToTxnRequest', 'request', valid='0-3', flexible='3+',
    api_key=24, listeners=('zkBroker',),
    fields=[
        F('transactional_id', 'string', '0+', entity_type='transactionalId'),
        F('producer_id', 'int64', '0+', entity_type='producerId'),
        F('producer_epoch', 'int16', '0+'),
        F('topics', '[]AddPartitionsToTxnTopic', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partitions', '[]int32', '0+'),
        ]),
    ])
AddPartitionsToTxnRequest = build_classes(ADD_PARTITIONS_TO_TXN_REQUEST)

ADD_PARTITIONS_TO_TXN_RESPONSE = Message(
    'AddPartitionsToTxnResponse', 'response', valid='0-3', flexible='3+',
    api_key=24,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]AddPartitionsToTxnTopicResult', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('results', '[]AddPartitionsToTxnPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+', map_key=True),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ])
AddPartitionsToTxnResponse = build_classes(ADD_PARTITIONS_TO_TXN_RESPONSE)
