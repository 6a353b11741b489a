"""DescribeUserScramCredentials (API key 50): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    'DescribeUserScramCredentialsRequest', 'request', valid='0', flexible='0+',
    api_key=50, listeners=('zkBroker',),
    fields=[
        F('users', '[]UserName', '0+', nullable='0+', fields=[
            F('name', 'string', '0+'),
        ]),
    ])
DescribeUserScramCredentialsRequest = build_classes(DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    'DescribeUserScramCredentialsResponse', 'response', valid='0', flexible='0+',
    api_key=50,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('results', '[]DescribeUserScramCredentialsResult', '0+', fields=[
            F('user', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('credential_infos', '[]CredentialInfo', '0+', fields=[
                F('mechanism', 'int8', '0+'),
                F('iterations', 'int32', '0+'),
            ]),
        ]),
    ])
DescribeUserScramCredentialsResponse = build_classes(DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE)
