"""CreateDelegationToken (API key 38): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

CREATE_DELEGATION_TOKEN_REQUEST = Message(
    'CreateDelegationTokenRequest', 'request', valid='0-2', flexible='2+',
    api_key=38, listeners=('zkBroker',),
    fields=[
        F('renewers', '[]CreatableRenewers', '0+', fields=[
            F('principal_type', 'string', '0+'),
            F('principal_name', 'string', '0+'),
        ]),
        F('max_lifetime_ms', 'int64', '0+'),
    ])
CreateDelegationTokenRequest = build_classes(CREATE_DELEGATION_TOKEN_REQUEST)

CREATE_DELEGATION_TOKEN_RESPONSE = Message(
    'CreateDelegationTokenResponse', 'response', valid='0-2', flexible='2+',
    api_key=38,
    fields=[
        F('error_code', 'int16', '0+'),
        F('principal_type', 'string', '0+'),
        F('principal_name', 'string', '0+'),
        F('issue_timestamp_ms', 'int64', '0+'),
        F('expiry_timestamp_ms', 'int64', '0+'),
        F('max_timestamp_ms', 'int64', '0+'),
        F('token_id', 'string', '0+'),
        F('hmac', 'bytes', '0+'),
        F('throttle_time_ms', 'int32', '0+'),
    ])
CreateDelegationTokenResponse = build_classes(CREATE_DELEGATION_TOKEN_RESPONSE)
