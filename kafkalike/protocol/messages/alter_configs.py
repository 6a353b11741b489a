"""AlterConfigs (API key 33): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ALTER_CONFIGS_REQUEST = Message(
    'AlterConfigsRequest', 'request', valid='0-2', flexible='2+',
    api_key=33, listeners=('zkBroker',),
    fields=[
        F('resources', '[]AlterConfigsResource', '0+', fields=[
            F('resource_type', 'int8', '0+', map_key=True),
            F('resource_name', 'string', '0+', map_key=True),
            F('configs', '[]AlterableConfig', '0+', fields=[
                F('name', 'string', '0+', map_key=True),
                F('value', 'string', '0+', nullable='0+'),
            ]),
        ]),
        F('validate_only', 'bool', '0+'),
    ])
AlterConfigsRequest = build_classes(ALTER_CONFIGS_REQUEST)

ALTER_CONFIGS_RESPONSE = Message(
    'AlterConfigsResponse', 'response', valid='0-2', flexible='2+',
    api_key=33,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('responses', '[]AlterConfigsResourceResponse', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
        ]),
    ])
AlterConfigsResponse = build_classes(ALTER_CONFIGS_RESPONSE)
