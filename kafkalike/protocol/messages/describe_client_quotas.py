"""DescribeClientQuotas (API key 48): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_CLIENT_QUOTAS_REQUEST = Message(
    'DescribeClientQuotasRequest', 'request', valid='0-1', flexible='1+',
    api_key=48, listeners=('zkBroker',),
    fields=[
        F('components', '[]ComponentData', '0+', fields=[
            F('entity_type', 'string', '0+'),
            F('match_type', 'int8', '0+'),
            F('match', 'string', '0+', nullable='0+'),
        ]),
        F('strict', 'bool', '0+'),
    ])
DescribeClientQuotasRequest = build_classes(DESCRIBE_CLIENT_QUOTAS_REQUEST)

DESCRIBE_CLIENT_QUOTAS_RESPONSE = Message(
    'DescribeClientQuotasResponse', 'response', valid='0-1', flexible='1+',
    api_key=48,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('entries', '[]EntryData', '0+', nullable='0+', fields=[
            F('entity', '[]EntityData', '0+', fields=[
                F('entity_type', 'string', '0+'),
                F('entity_name', 'string', '0+', nullable='0+'),
            ]),
            F('values', '[]ValueData', '0+', fields=[
                F('key', 'string', '0+'),
                F('value', 'float64', '0+'),
            ]),
        ]),
    ])
DescribeClientQuotasResponse = build_classes(DESCRIBE_CLIENT_QUOTAS_RESPONSE)
