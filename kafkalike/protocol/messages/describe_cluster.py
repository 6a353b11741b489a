"""DescribeCluster (API key 60): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_CLUSTER_REQUEST = Message(
    'DescribeClusterRequest', 'request', valid='0', flexible='0+',
    api_key=60, listeners=('zkBroker', 'broker'),
    fields=[
        F('include_cluster_authorized_operations', 'bool', '0+'),
    ])
DescribeClusterRequest = build_classes(DESCRIBE_CLUSTER_REQUEST)

DESCRIBE_CLUSTER_RESPONSE = Message(
    'DescribeClusterResponse', 'response', valid='0', flexible='0+',
    api_key=60,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+', default=None),
        F('cluster_id', 'string', '0+'),
        F('controller_id', 'int32', '0+', default=-1, entity_type='brokerId'),
        F('brokers', '[]DescribeClusterBroker', '0+', fields=[
            F('broker_id', 'int32', '0+', map_key=True, entity_type='brokerId'),
            F('host', 'string', '0+'),
            F('port', 'int32', '0+'),
            F('rack', 'string', '0+', nullable='0+', default=None),
        ]),
        F('cluster_authorized_operations', 'int32', '0+', default=-2147483648),
    ])
DescribeClusterResponse = build_classes(DESCRIBE_CLUSTER_RESPONSE)
