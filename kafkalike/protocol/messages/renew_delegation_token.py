"""RenewDelegationToken (API key 39): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

RENEW_DELEGATION_TOKEN_REQUEST = Message(
    'RenewDelegationTokenRequest', 'request', valid='0-2', flexible='2+',
    api_key=39, listeners=('zkBroker',),
    fields=[
        F('hmac', 'bytes', '0+'),
        F('renew_period_ms', 'int64', '0+'),
    ])
RenewDelegationTokenRequest = build_classes(RENEW_DELEGATION_TOKEN_REQUEST)

RENEW_DELEGATION_TOKEN_RESPONSE = Message(
    'RenewDelegationTokenResponse', 'response', valid='0-2', flexible='2+',
    api_key=39,
    fields=[
        F('error_code', 'int16', '0+'),
        F('expiry_timestamp_ms', 'int64', '0+'),
        F('throttle_time_ms', 'int32', '0+'),
    ])
RenewDelegationTokenResponse = build_classes(RENEW_DELEGATION_TOKEN_RESPONSE)
