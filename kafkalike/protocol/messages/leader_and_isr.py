"""LeaderAndIsr (API key 4): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

_LEADER_AND_ISR_PARTITION_STATE = [
    F('topic_name', 'string', '0-1', ignorable=True, entity_type='topicName'),
    F('partition_index', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('leader', 'int32', '0+', entity_type='brokerId'),
    F('leader_epoch', 'int32', '0+'),
    F('isr', '[]int32', '0+'),
    F('zk_version', 'int32', '0+'),
    F('replicas', '[]int32', '0+'),
    F('adding_replicas', '[]int32', '3+', ignorable=True),
    F('removing_replicas', '[]int32', '3+', ignorable=True),
    F('is_new', 'bool', '1+', default=False, ignorable=True),
]

_LEADER_AND_ISR_PARTITION_ERROR = [
    F('topic_name', 'string', '0-4', ignorable=True, entity_type='topicName'),
    F('partition_index', 'int32', '0+'),
    F('error_code', 'int16', '0+'),
]

LEADER_AND_ISR_REQUEST = Message(
    'LeaderAndIsrRequest', 'request', valid='0-5', flexible='4+',
    api_key=4, listeners=('zkBroker',),
    fields=[
        F('controller_id', 'int32', '0+', entity_type='brokerId'),
        F('controller_epoch', 'int32', '0+'),
        F('broker_epoch', 'int64', '2+', default=-1, ignorable=True),
        F('type', 'int8', '5+'),
        F('ungrouped_partition_states', '[]LeaderAndIsrPartitionState', '0-1', fields=_LEADER_AND_ISR_PARTITION_STATE),
        F('topic_states', '[]LeaderAndIsrTopicState', '2+', fields=[
            F('topic_name', 'string', '2+', entity_type='topicName'),
            F('topic_id', 'uuid', '5+', ignorable=True),
            F('partition_states', '[]LeaderAndIsrPartitionState', '2+', fields=_LEADER_AND_ISR_PARTITION_STATE),
        ]),
        F('live_leaders', '[]LeaderAndIsrLiveLeader', '0+', fields=[
            F('broker_id', 'int32', '0+', entity_type='brokerId'),
            F('host_name', 'string', '0+'),
            F('port', 'int32', '0+'),
        ]),
    ])
LeaderAndIsrRequest = build_classes(LEADER_AND_ISR_REQUEST)

LEADER_AND_ISR_RESPONSE = Message(
    'LeaderAndIsrResponse', 'response', valid='0-5', flexible='4+',
    api_key=4,
    fields=[
        F('error_code', 'int16', '0+'),
        F('partition_errors', '[]LeaderAndIsrPartitionError', '0-4', fields=_LEADER_AND_ISR_PARTITION_ERROR),
        F('topics', '[]LeaderAndIsrTopicError', '5+', fields=[
            F('topic_id', 'uuid', '5+'),
            F('partition_errors', '[]LeaderAndIsrPartitionError', '5+', fields=_LEADER_AND_ISR_PARTITION_ERROR),
        ]),
    ])
LeaderAndIsrResponse = build_classes(LEADER_AND_ISR_RESPONSE)
