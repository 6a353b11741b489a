"""ListPartitionReassignments (API key 46): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

LIST_PARTITION_REASSIGNMENTS_REQUEST = Message(
    'ListPartitionReassignmentsRequest', 'request', valid='0', flexible='0+',
    api_key=46, listeners=('zkBroker',),
    fields=[
        F('timeout_ms', 'int32', '0+', default=60000),
        F('topics', '[]ListPartitionReassignmentsTopics', '0+', nullable='0+', default=None, fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partition_indexes', '[]int32', '0+'),
        ]),
    ])
ListPartitionReassignmentsRequest = build_classes(LIST_PARTITION_REASSIGNMENTS_REQUEST)

LIST_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    'ListPartitionReassignmentsResponse', 'response', valid='0', flexible='0+',
    api_key=46,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('topics', '[]OngoingTopicReassignment', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]OngoingPartitionReassignment', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('replicas', '[]int32', '0+'),
                F('adding_replicas', '[]int32', '0+'),
                F('removing_replicas', '[]int32', '0+'),
            ]),
        ]),
    ])
ListPartitionReassignmentsResponse = build_classes(LIST_PARTITION_REASSIGNMENTS_RESPONSE)
