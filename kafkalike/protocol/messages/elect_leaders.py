"""ElectLeaders (API key 43): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ELECT_LEADERS_REQUEST = Message(
    'ElectLeadersRequest', 'request', valid='0-2', flexible='2+',
    api_key=43, listeners=('zkBroker',),
    fields=[
        F('election_type', 'int8', '1+'),
        F('topic_partitions', '[]TopicPartitions', '0+', nullable='0+', fields=[
            F('topic', 'string', '0+', entity_type='topicName'),
            F('partition_id', '[]int32', '0+'),
        ]),
        F('timeout_ms', 'int32', '0+', default=60000),
    ])
ElectLeadersRequest = build_classes(ELECT_LEADERS_REQUEST)

ELECT_LEADERS_RESPONSE = Message(
    'ElectLeadersResponse', 'response', valid='0-2', flexible='2+',
    api_key=43,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '1+'),
        F('replica_election_results', '[]ReplicaElectionResult', '0+', fields=[
            F('topic', 'string', '0+', entity_type='topicName'),
            F('partition_result', '[]PartitionResult', '0+', fields=[
                F('partition_id', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ])
ElectLeadersResponse = build_classes(ELECT_LEADERS_RESPONSE)
