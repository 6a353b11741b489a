"""UpdateMetadata (API key 6): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

_UPDATE_METADATA_PARTITION_STATE = [
    F('topic_name', 'string', '0-4', ignorable=True, entity_type='topicName'),
    F('partition_index', 'int32', '0+'),
    F('controller_epoch', 'int32', '0+'),
    F('leader', 'int32', '0+', entity_type='brokerId'),
    F('leader_epoch', 'int32', '0+'),
    F('isr', '[]int32', '0+', entity_type='brokerId'),
    F('zk_version', 'int32', '0+'),
    F('replicas', '[]int32', '0+', entity_type='brokerId'),
    F('offline_replicas', '[]int32', '4+', ignorable=True, entity_type='brokerId'),
]

UPDATE_METADATA_REQUEST = Message(
    'UpdateMetadataRequest', 'request', valid='0-7', flexible='6+',
    api_key=6, listeners=('zkBroker',),
    fields=[
        F('controller_id', 'int32', '0+', entity_type='brokerId'),
        F('controller_epoch', 'int32', '0+'),
        F('broker_epoch', 'int64', '5+', default=-1, ignorable=True),
        F('ungrouped_partition_states', '[]UpdateMetadataPartitionState', '0-4', fields=_UPDATE_METADATA_PARTITION_STATE),
        F('topic_states', '[]UpdateMetadataTopicState', '5+', fields=[
            F('topic_name', 'string', '5+', entity_type='topicName'),
            F('topic_id', 'uuid', '7+', ignorable=True),
            F('partition_states', '[]UpdateMetadataPartitionState', '5+', fields=_UPDATE_METADATA_PARTITION_STATE),
        ]),
        F('live_brokers', '[]UpdateMetadataBroker', '0+', fields=[
            F('id', 'int32', '0+', entity_type='brokerId'),
            F('v0_host', 'string', '0', ignorable=True),
            F('v0_port', 'int32', '0', ignorable=True),
            F('endpoints', '[]UpdateMetadataEndpoint', '1+', ignorable=True, fields=[
                F('port', 'int32', '1+'),
                F('host', 'string', '1+'),
                F('listener', 'string', '3+', ignorable=True),
                F('security_protocol', 'int16', '1+'),
            ]),
            F('rack', 'string', '2+', nullable='0+', ignorable=True),
        ]),
    ])
UpdateMetadataRequest = build_classes(UPDATE_METADATA_REQUEST)

UPDATE_METADATA_RESPONSE = Message(
    'UpdateMetadataResponse', 'response', valid='0-7', flexible='6+',
    api_key=6,
    fields=[
        F('error_code', 'int16', '0+'),
    ])
UpdateMetadataResponse = build_classes(UPDATE_METADATA_RESPONSE)
