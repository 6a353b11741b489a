"""AlterPartitionReassignments (API key 45): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ALTER_PARTITION_REASSIGNMENTS_REQUEST = Message(
    'AlterPartitionReassignmentsRequest', 'request', valid='0', flexible='0+',
    api_key=45, listeners=('zkBroker',),
    fields=[
        F('timeout_ms', 'int32', '0+', default=60000),
        F('topics', '[]ReassignableTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]ReassignablePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('replicas', '[]int32', '0+', nullable='0+', default=None),
            ]),
        ]),
    ])
AlterPartitionReassignmentsRequest = build_classes(ALTER_PARTITION_REASSIGNMENTS_REQUEST)

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    'AlterPartitionReassignmentsResponse', 'response', valid='0', flexible='0+',
    api_key=45,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('responses', '[]ReassignableTopicResponse', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]ReassignablePartitionResponse', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ])
AlterPartitionReassignmentsResponse = build_classes(ALTER_PARTITION_REASSIGNMENTS_RESPONSE)
