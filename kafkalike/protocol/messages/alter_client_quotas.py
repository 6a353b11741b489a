"""AlterClientQuotas (API key 49): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ALTER_CLIENT_QUOTAS_REQUEST = Message(
    'AlterClientQuotasRequest', 'request', valid='0-1', flexible='1+',
    api_key=49, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('entries', '[]EntryData', '0+', fields=[
            F('entity', '[]EntityData', '0+', fields=[
                F('entity_type', 'string', '0+'),
                F('entity_name', 'string', '0+', nullable='0+'),
            ]),
            F('ops', '[]OpData', '0+', fields=[
                F('key', 'string', '0+'),
                F('value', 'float64', '0+'),
                F('remove', 'bool', '0+'),
            ]),
        ]),
        F('validate_only', 'bool', '0+'),
    ])
AlterClientQuotasRequest = build_classes(ALTER_CLIENT_QUOTAS_REQUEST)

ALTER_CLIENT_QUOTAS_RESPONSE = Message(
    'AlterClientQuotasResponse', 'response', valid='0-1', flexible='1+',
    api_key=49,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('entries', '[]EntryData', '0+', fields=[
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('entity', '[]EntityData', '0+', fields=[
                F('entity_type', 'string', '0+'),
                F('entity_name', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ])
AlterClientQuotasResponse = build_classes(ALTER_CLIENT_QUOTAS_RESPONSE)
