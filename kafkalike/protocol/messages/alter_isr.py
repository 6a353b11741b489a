"""AlterIsr (API key 56): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ALTER_ISR_REQUEST = Message(
    'AlterIsrRequest', 'request', valid='0', flexible='0+',
    api_key=56, listeners=('zkBroker', 'controller'),
    fields=[
        F('broker_id', 'int32', '0+', entity_type='brokerId'),
        F('broker_epoch', 'int64', '0+', default=-1),
        F('topics', '[]TopicData', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('leader_epoch', 'int32', '0+'),
                F('new_isr', '[]int32', '0+'),
                F('current_isr_version', 'int32', '0+'),
            ]),
        ]),
    ])
AlterIsrRequest = build_classes(ALTER_ISR_REQUEST)

ALTER_ISR_RESPONSE = Message(
    'AlterIsrResponse', 'response', valid='0', flexible='0+',
    api_key=56,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('topics', '[]TopicData', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]PartitionData', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('leader_id', 'int32', '0+', entity_type='brokerId'),
                F('leader_epoch', 'int32', '0+'),
                F('isr', '[]int32', '0+'),
                F('current_isr_version', 'int32', '0+'),
            ]),
        ]),
    ])
AlterIsrResponse = build_classes(ALTER_ISR_RESPONSE)
