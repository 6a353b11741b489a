"""ExpireDelegationToken (API key 40): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

EXPIRE_DELEGATION_TOKEN_REQUEST = Message(
    'ExpireDelegationTokenRequest', 'request', valid='0-2', flexible='2+',
    api_key=40, listeners=('zkBroker',),
    fields=[
        F('hmac', 'bytes', '0+'),
        F('expiry_time_period_ms', 'int64', '0+'),
    ])
ExpireDelegationTokenRequest = build_classes(EXPIRE_DELEGATION_TOKEN_REQUEST)

EXPIRE_DELEGATION_TOKEN_RESPONSE = Message(
    'ExpireDelegationTokenResponse', 'response', valid='0-2', flexible='2+',
    api_key=40,
    fields=[
        F('error_code', 'int16', '0+'),
        F('expiry_timestamp_ms', 'int64', '0+'),
        F('throttle_time_ms', 'int32', '0+'),
    ])
ExpireDelegationTokenResponse = build_classes(EXPIRE_DELEGATION_TOKEN_RESPONSE)
