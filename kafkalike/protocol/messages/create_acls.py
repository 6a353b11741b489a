"""CreateAcls (API key 30): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

CREATE_ACLS_REQUEST = Message(
    'CreateAclsRequest', 'request', valid='0-2', flexible='2+',
    api_key=30, listeners=('zkBroker',),
    fields=[
        F('creations', '[]AclCreation', '0+', fields=[
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
            F('resource_pattern_type', 'int8', '1+', default=3),
            F('principal', 'string', '0+'),
            F('host', 'string', '0+'),
            F('operation', 'int8', '0+'),
            F('permission_type', 'int8', '0+'),
        ]),
    ])
CreateAclsRequest = build_classes(CREATE_ACLS_REQUEST)

CREATE_ACLS_RESPONSE = Message(
    'CreateAclsResponse', 'response', valid='0-2', flexible='2+',
    api_key=30,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]AclCreationResult', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ])
CreateAclsResponse = build_classes(CREATE_ACLS_RESPONSE)
