"""Request and response headers as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

REQUEST_HEADER = Message(
    'RequestHeader', 'header', valid='0-2', flexible='2+',
    fields=[
        F('request_api_key', 'int16', '0+'),
        F('request_api_version', 'int16', '0+'),
        F('correlation_id', 'int32', '0+'),
        F('client_id', 'string', '1+', nullable='1+', ignorable=True, flexible='none'),
    ])
RequestHeader = build_classes(REQUEST_HEADER)

RESPONSE_HEADER = Message(
    'ResponseHeader', 'header', valid='0-1', flexible='1+',
    fields=[
        F('correlation_id', 'int32', '0+'),
    ])
ResponseHeader = build_classes(RESPONSE_HEADER)
