"""DeleteRecords (API key 21): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DELETE_RECORDS_REQUEST = Message(
    'DeleteRecordsRequest', 'request', valid='0-2', flexible='2+',
    api_key=21, listeners=('zkBroker', 'broker'),
    fields=[
        F('topics', '[]DeleteRecordsTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]DeleteRecordsPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('offset', 'int64', '0+'),
            ]),
        ]),
        F('timeout_ms', 'int32', '0+'),
    ])
DeleteRecordsRequest = build_classes(DELETE_RECORDS_REQUEST)

DELETE_RECORDS_RESPONSE = Message(
    'DeleteRecordsResponse', 'response', valid='0-2', flexible='2+',
    api_key=21,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('topics', '[]DeleteRecordsTopicResult', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partitions', '[]DeleteRecordsPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+', map_key=True),
                F('low_watermark', 'int64', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ])
DeleteRecordsResponse = build_classes(DELETE_RECORDS_RESPONSE)
