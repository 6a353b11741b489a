"""DescribeAcls (API key 29): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_ACLS_REQUEST = Message(
    'DescribeAclsRequest', 'request', valid='0-2', flexible='2+',
    api_key=29, listeners=('zkBroker',),
    fields=[
        F('resource_type_filter', 'int8', '0+'),
        F('resource_name_filter', 'string', '0+', nullable='0+'),
        F('pattern_type_filter', 'int8', '1+', default=3),
        F('principal_filter', 'string', '0+', nullable='0+'),
        F('host_filter', 'string', '0+', nullable='0+'),
        F('operation', 'int8', '0+'),
        F('permission_type', 'int8', '0+'),
    ])
DescribeAclsRequest = build_classes(DESCRIBE_ACLS_REQUEST)

DESCRIBE_ACLS_RESPONSE = Message(
    'DescribeAclsResponse', 'response', valid='0-2', flexible='2+',
    api_key=29,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('resources', '[]DescribeAclsResource', '0+', fields=[
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
            F('pattern_type', 'int8', '1+', default=3),
            F('acls', '[]AclDescription', '0+', fields=[
                F('principal', 'string', '0+'),
                F('host', 'string', '0+'),
                F('operation', 'int8', '0+'),
                F('permission_type', 'int8', '0+'),
            ]),
        ]),
    ])
DescribeAclsResponse = build_classes(DESCRIBE_ACLS_RESPONSE)
