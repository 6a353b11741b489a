"""ControlledShutdown (API key 7): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

CONTROLLED_SHUTDOWN_REQUEST = Message(
    'ControlledShutdownRequest', 'request', valid='0-3', flexible='3+',
    api_key=7, listeners=('zkBroker', 'controller'),
    fields=[
        F('broker_id', 'int32', '0+', entity_type='brokerId'),
        F('broker_epoch', 'int64', '2+', default=-1, ignorable=True),
    ])
ControlledShutdownRequest = build_classes(CONTROLLED_SHUTDOWN_REQUEST)

CONTROLLED_SHUTDOWN_RESPONSE = Message(
    'ControlledShutdownResponse', 'response', valid='0-3', flexible='3+',
    api_key=7,
    fields=[
        F('error_code', 'int16', '0+'),
        F('remaining_partitions', '[]RemainingPartition', '0+', fields=[
            F('topic_name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partition_index', 'int32', '0+', map_key=True),
        ]),
    ])
ControlledShutdownResponse = build_classes(CONTROLLED_SHUTDOWN_RESPONSE)
