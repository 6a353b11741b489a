"""DeleteAcls (API key 31): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DELETE_ACLS_REQUEST = Message(
    'DeleteAclsRequest', 'request', valid='0-2', flexible='2+',
    api_key=31, listeners=('zkBroker',),
    fields=[
        F('filters', '[]DeleteAclsFilter', '0+', fields=[
            F('resource_type_filter', 'int8', '0+'),
            F('resource_name_filter', 'string', '0+', nullable='0+'),
            F('pattern_type_filter', 'int8', '1+', default=3),
            F('principal_filter', 'string', '0+', nullable='0+'),
            F('host_filter', 'string', '0+', nullable='0+'),
            F('operation', 'int8', '0+'),
            F('permission_type', 'int8', '0+'),
        ]),
    ])
DeleteAclsRequest = build_classes(DELETE_ACLS_REQUEST)

DELETE_ACLS_RESPONSE = Message(
    'DeleteAclsResponse', 'response', valid='0-2', flexible='2+',
    api_key=31,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('filter_results', '[]DeleteAclsFilterResult', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('matching_acls', '[]DeleteAclsMatchingAcl', '0+', fields=[
                F('error_code', 'int16', '0+'),
                F('error_message', 'string', '0+', nullable='0+'),
                F('resource_type', 'int8', '0+'),
                F('resource_name', 'string', '0+'),
                F('pattern_type', 'int8', '1+', default=3),
                F('principal', 'string', '0+'),
                F('host', 'string', '0+'),
                F('operation', 'int8', '0+'),
                F('permission_type', 'int8', '0+'),
            ]),
        ]),
    ])
DeleteAclsResponse = build_classes(DELETE_ACLS_RESPONSE)
