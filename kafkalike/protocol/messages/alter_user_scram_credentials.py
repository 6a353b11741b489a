"""AlterUserScramCredentials (API key 51): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    'AlterUserScramCredentialsRequest', 'request', valid='0', flexible='0+',
    api_key=51, listeners=('zkBroker',),
    fields=[
        F('deletions', '[]ScramCredentialDeletion', '0+', fields=[
            F('name', 'string', '0+'),
            F('mechanism', 'int8', '0+'),
        ]),
        F('upsertions', '[]ScramCredentialUpsertion', '0+', fields=[
            F('name', 'string', '0+'),
            F('mechanism', 'int8', '0+'),
            F('iterations', 'int32', '0+'),
            F('salt', 'bytes', '0+'),
            F('salted_password', 'bytes', '0+'),
        ]),
    ])
AlterUserScramCredentialsRequest = build_classes(ALTER_USER_SCRAM_CREDENTIALS_REQUEST)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    'AlterUserScramCredentialsResponse', 'response', valid='0', flexible='0+',
    api_key=51,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]AlterUserScramCredentialsResult', '0+', fields=[
            F('user', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ])
AlterUserScramCredentialsResponse = build_classes(ALTER_USER_SCRAM_CREDENTIALS_RESPONSE)
