"""DescribeLogDirs (API key 35): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_LOG_DIRS_REQUEST = Message(
    'DescribeLogDirsRequest', 'request', valid='0-2', flexible='2+',
    api_key=35, listeners=('zkBroker', 'broker'),
    fields=[
        F('topics', '[]DescribableLogDirTopic', '0+', nullable='0+', fields=[
            F('topic', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partition_index', '[]int32', '0+'),
        ]),
    ])
DescribeLogDirsRequest = build_classes(DESCRIBE_LOG_DIRS_REQUEST)

DESCRIBE_LOG_DIRS_RESPONSE = Message(
    'DescribeLogDirsResponse', 'response', valid='0-2', flexible='2+',
    api_key=35,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]DescribeLogDirsResult', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('log_dir', 'string', '0+'),
            F('topics', '[]DescribeLogDirsTopic', '0+', fields=[
                F('name', 'string', '0+', entity_type='topicName'),
                F('partitions', '[]DescribeLogDirsPartition', '0+', fields=[
                    F('partition_index', 'int32', '0+'),
                    F('partition_size', 'int64', '0+'),
                    F('offset_lag', 'int64', '0+'),
                    F('is_future_key', 'bool', '0+'),
                ]),
            ]),
        ]),
    ])
DescribeLogDirsResponse = build_classes(DESCRIBE_LOG_DIRS_RESPONSE)
