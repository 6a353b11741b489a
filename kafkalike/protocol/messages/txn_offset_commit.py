"""TxnOffsetCommit (API key 28): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

TXN_OFFSET_COMMIT_REQUEST = Message(
    'TxnOffsetCommitRequest', 'request', valid='0-3', flexible='3+',
    api_key=28, listeners=('zkBroker',),
    fields=[
        F('transactional_id', 'string', '0+', entity_type='transactionalId'),
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('producer_id', 'int64', '0+', entity_type='producerId'),
        F('producer_epoch', 'int16', '0+'),
        F('generation_id', 'int32', '3+', default=-1),
        F('member_id', 'string', '3+', default=''),
        F('group_instance_id', 'string', '3+', nullable='3+', default=None),
        F('topics', '[]TxnOffsetCommitRequestTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]TxnOffsetCommitRequestPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('committed_offset', 'int64', '0+'),
                F('committed_leader_epoch', 'int32', '2+', default=-1, ignorable=True),
                F('committed_metadata', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ])
TxnOffsetCommitRequest = build_classes(TXN_OFFSET_COMMIT_REQUEST)

TXN_OFFSET_COMMIT_RESPONSE = Message(
    'TxnOffsetCommitResponse', 'response', valid='0-3', flexible='3+',
    api_key=28,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('topics', '[]TxnOffsetCommitResponseTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]TxnOffsetCommitResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ])
TxnOffsetCommitResponse = build_classes(TXN_OFFSET_COMMIT_RESPONSE)
