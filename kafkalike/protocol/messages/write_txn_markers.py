"""WriteTxnMarkers (API key 27): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

WRITE_TXN_MARKERS_REQUEST = Message(
    'WriteTxnMarkersRequest', 'request', valid='0-1', flexible='1+',
    api_key=27, listeners=('zkBroker', 'broker'),
    fields=[
        F('markers', '[]WritableTxnMarker', '0+', fields=[
            F('producer_id', 'int64', '0+', entity_type='producerId'),
            F('producer_epoch', 'int16', '0+'),
            F('transaction_result', 'bool', '0+'),
            F('topics', '[]WritableTxnMarkerTopic', '0+', fields=[
                F('name', 'string', '0+', entity_type='topicName'),
                F('partition_indexes', '[]int32', '0+'),
            ]),
            F('coordinator_epoch', 'int32', '0+'),
        ]),
    ])
WriteTxnMarkersRequest = build_classes(WRITE_TXN_MARKERS_REQUEST)

WRITE_TXN_MARKERS_RESPONSE = Message(
    'WriteTxnMarkersResponse', 'response', valid='0-1', flexible='1+',
    api_key=27,
    fields=[
        F('markers', '[]WritableTxnMarkerResult', '0+', fields=[
            F('producer_id', 'int64', '0+', entity_type='producerId'),
            F('topics', '[]WritableTxnMarkerTopicResult', '0+', fields=[
                F('name', 'string', '0+', entity_type='topicName'),
                F('partitions', '[]WritableTxnMarkerPartitionResult', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('error_code', 'int16', '0+'),
                ]),
            ]),
        ]),
    ])
WriteTxnMarkersResponse = build_classes(WRITE_TXN_MARKERS_RESPONSE)
