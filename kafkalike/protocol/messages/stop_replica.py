"""StopReplica (API key 5): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

STOP_REPLICA_REQUEST = Message(
    'StopReplicaRequest', 'request', valid='0-3', flexible='2+',
    api_key=5, listeners=('zkBroker',),
    fields=[
        F('controller_id', 'int32', '0+', entity_type='brokerId'),
        F('controller_epoch', 'int32', '0+'),
        F('broker_epoch', 'int64', '1+', default=-1, ignorable=True),
        F('delete_partitions', 'bool', '0-2'),
        F('ungrouped_partitions', '[]StopReplicaPartitionV0', '0', fields=[
            F('topic_name', 'string', '0', entity_type='topicName'),
            F('partition_index', 'int32', '0'),
        ]),
        F('topics', '[]StopReplicaTopicV1', '1-2', fields=[
            F('name', 'string', '1-2', entity_type='topicName'),
            F('partition_indexes', '[]int32', '1-2'),
        ]),
        F('topic_states', '[]StopReplicaTopicState', '3+', fields=[
            F('topic_name', 'string', '3+', entity_type='topicName'),
            F('partition_states', '[]StopReplicaPartitionState', '3+', fields=[
                F('partition_index', 'int32', '3+'),
                F('leader_epoch', 'int32', '3+', default=-1),
                F('delete_partition', 'bool', '3+'),
            ]),
        ]),
    ])
StopReplicaRequest = build_classes(STOP_REPLICA_REQUEST)

STOP_REPLICA_RESPONSE = Message(
    'StopReplicaResponse', 'response', valid='0-3', flexible='2+',
    api_key=5,
    fields=[
        F('error_code', 'int16', '0+'),
        F('partition_errors', '[]StopReplicaPartitionError', '0+', fields=[
            F('topic_name', 'string', '0+', entity_type='topicName'),
            F('partition_index', 'int32', '0+'),
            F('error_code', 'int16', '0+'),
        ]),
    ])
StopReplicaResponse = build_classes(STOP_REPLICA_RESPONSE)
