"""IncrementalAlterConfigs (API key 44): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

INCREMENTAL_ALTER_CONFIGS_REQUEST = Message(
    'IncrementalAlterConfigsRequest', 'request', valid='0-1', flexible='1+',
    api_key=44, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('resources', '[]AlterConfigsResource', '0+', fields=[
            F('resource_type', 'int8', '0+', map_key=True),
            F('resource_name', 'string', '0+', map_key=True),
            F('configs', '[]AlterableConfig', '0+', fields=[
                F('name', 'string', '0+', map_key=True),
                F('config_operation', 'int8', '0+', map_key=True),
                F('value', 'string', '0+', nullable='0+'),
            ]),
        ]),
        F('validate_only', 'bool', '0+'),
    ])
IncrementalAlterConfigsRequest = build_classes(INCREMENTAL_ALTER_CONFIGS_REQUEST)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = Message(
    'IncrementalAlterConfigsResponse', 'response', valid='0-1', flexible='1+',
    api_key=44,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('responses', '[]AlterConfigsResourceResponse', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('resource_type', 'int8', '0+'),
            F('resource_name', 'string', '0+'),
        ]),
    ])
IncrementalAlterConfigsResponse = build_classes(INCREMENTAL_ALTER_CONFIGS_RESPONSE)
