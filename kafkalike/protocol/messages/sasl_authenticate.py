"""SaslAuthenticate (API key 36): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

SASL_AUTHENTICATE_REQUEST = Message(
    'SaslAuthenticateRequest', 'request', valid='0-2', flexible='2+',
    api_key=36, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('auth_bytes', 'bytes', '0+'),
    ])
SaslAuthenticateRequest = build_classes(SASL_AUTHENTICATE_REQUEST)

SASL_AUTHENTICATE_RESPONSE = Message(
    'SaslAuthenticateResponse', 'response', valid='0-2', flexible='2+',
    api_key=36,
    fields=[
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('auth_bytes', 'bytes', '0+'),
        F('session_lifetime_ms', 'int64', '1+', default=0, ignorable=True),
    ])
SaslAuthenticateResponse = build_classes(SASL_AUTHENTICATE_RESPONSE)
