"""DescribeDelegationToken (API key 41): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_DELEGATION_TOKEN_REQUEST = Message(
    'DescribeDelegationTokenRequest', 'request', valid='0-2', flexible='2+',
    api_key=41, listeners=('zkBroker',),
    fields=[
        F('owners', '[]DescribeDelegationTokenOwner', '0+', nullable='0+', fields=[
            F('principal_type', 'string', '0+'),
            F('principal_name', 'string', '0+'),
        ]),
    ])
DescribeDelegationTokenRequest = build_classes(DESCRIBE_DELEGATION_TOKEN_REQUEST)

DESCRIBE_DELEGATION_TOKEN_RESPONSE = Message(
    'DescribeDelegationTokenResponse', 'response', valid='0-2', flexible='2+',
    api_key=41,
    fields=[
        F('error_code', 'int16', '0+'),
        F('tokens', '[]DescribedDelegationToken', '0+', fields=[
            F('principal_type', 'string', '0+'),
            F('principal_name', 'string', '0+'),
            F('issue_timestamp', 'int64', '0+'),
            F('expiry_timestamp', 'int64', '0+'),
            F('max_timestamp', 'int64', '0+'),
            F('token_id', 'string', '0+'),
            F('hmac', 'bytes', '0+'),
            F('renewers', '[]DescribedDelegationTokenRenewer', '0+', fields=[
                F('principal_type', 'string', '0+'),
                F('principal_name', 'string', '0+'),
            ]),
        ]),
        F('throttle_time_ms', 'int32', '0+'),
    ])
DescribeDelegationTokenResponse = build_classes(DESCRIBE_DELEGATION_TOKEN_RESPONSE)
