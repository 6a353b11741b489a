"""Fetch (API key 1): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

FETCH_REQUEST = Message(
    'FetchRequest', 'request', valid='0-12', flexible='12+',
    api_key=1, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('cluster_id', 'string', '12+', nullable='12+', tagged='12+', tag=0, default=None, ignorable=True),
        F('replica_id', 'int32', '0+'),
        F('max_wait_ms', 'int32', '0+'),
        F('min_bytes', 'int32', '0+'),
        F('max_bytes', 'int32', '3+', default=2147483647, ignorable=True),
        F('isolation_level', 'int8', '4+', default=0, ignorable=True),
        F('session_id', 'int32', '7+', default=0, ignorable=True),
        F('session_epoch', 'int32', '7+', default=-1, ignorable=True),
        F('topics', '[]FetchTopic', '0+', fields=[
            F('topic', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]FetchPartition', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '9+', default=-1, ignorable=True),
                F('fetch_offset', 'int64', '0+'),
                F('last_fetched_epoch', 'int32', '12+', default=-1),
                F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
                F('partition_max_bytes', 'int32', '0+'),
            ]),
        ]),
        F('forgotten_topics_data', '[]ForgottenTopic', '7+', fields=[
            F('topic', 'string', '7+', entity_type='topicName'),
            F('partitions', '[]int32', '7+'),
        ]),
        F('rack_id', 'string', '11+', default='', ignorable=True),
    ])
FetchRequest = build_classes(FETCH_REQUEST)

FETCH_RESPONSE = Message(
    'FetchResponse', 'response', valid='0-12', flexible='12+',
    api_key=1,
    fields=[
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('error_code', 'int16', '7+', ignorable=True),
        F('session_id', 'int32', '7+', default=0),
        F('responses', '[]FetchableTopicResponse', '0+', fields=[
            F('topic', 'string', '0+', entity_type='topicName'),
            F('partition_responses', '[]FetchablePartitionResponse', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('high_watermark', 'int64', '0+'),
                F('last_stable_offset', 'int64', '4+', default=-1, ignorable=True),
                F('log_start_offset', 'int64', '5+', default=-1, ignorable=True),
                F('diverging_epoch', 'EpochEndOffset', '12+', tagged='12+', tag=0, fields=[
                    F('epoch', 'int32', '12+', default=-1),
                    F('end_offset', 'int64', '12+', default=-1),
                ]),
                F('current_leader', 'LeaderIdAndEpoch', '12+', tagged='12+', tag=1, fields=[
                    F('leader_id', 'int32', '12+', default=-1),
                    F('leader_epoch', 'int32', '12+', default=-1),
                ]),
                F('snapshot_id', 'SnapshotId', '12+', tagged='12+', tag=2, fields=[
                    F('end_offset', 'int64', '0+', default=-1),
                    F('epoch', 'int32', '0+', default=-1),
                ]),
                F('aborted_transactions', '[]AbortedTransaction', '4+', nullable='4+', ignorable=True, fields=[
                    F('producer_id', 'int64', '4+', entity_type='producerId'),
                    F('first_offset', 'int64', '4+'),
                ]),
                F('preferred_read_replica', 'int32', '11+', default=-1),
                F('record_set', 'records', '0+', nullable='0+'),
            ]),
        ]),
    ])
FetchResponse = build_classes(FETCH_RESPONSE)
