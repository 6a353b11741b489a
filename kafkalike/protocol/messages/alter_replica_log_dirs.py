"""AlterReplicaLogDirs (API key 34): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ALTER_REPLICA_LOG_DIRS_REQUEST = Message(
    'AlterReplicaLogDirsRequest', 'request', valid='0-2', flexible='2+',
    api_key=34, listeners=('zkBroker', 'broker'),
    fields=[
        F('dirs', '[]AlterReplicaLogDir', '0+', fields=[
            F('path', 'string', '0+', map_key=True),
            F('topics', '[]AlterReplicaLogDirTopic', '0+', fields=[
                F('name', 'string', '0+', map_key=True, entity_type='topicName'),
                F('partitions', '[]int32', '0+'),
            ]),
        ]),
    ])
AlterReplicaLogDirsRequest = build_classes(ALTER_REPLICA_LOG_DIRS_REQUEST)

ALTER_REPLICA_LOG_DIRS_RESPONSE = Message(
    'AlterReplicaLogDirsResponse', 'response', valid='0-2', flexible='2+',
    api_key=34,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]AlterReplicaLogDirTopicResult', '0+', fields=[
            F('topic_name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]AlterReplicaLogDirPartitionResult', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ])
AlterReplicaLogDirsResponse = build_classes(ALTER_REPLICA_LOG_DIRS_RESPONSE)
