"""SaslHandshake (API key 17): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

SASL_HANDSHAKE_REQUEST = Message(
    'SaslHandshakeRequest', 'request', valid='0-1', flexible='none',
    api_key=17, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('mechanism', 'string', '0+'),
    ])
SaslHandshakeRequest = build_classes(SASL_HANDSHAKE_REQUEST)

SASL_HANDSHAKE_RESPONSE = Message(
    'SaslHandshakeResponse', 'response', valid='0-1', flexible='none',
    api_key=17,
    fields=[
        F('error_code', 'int16', '0+'),
        F('mechanisms', '[]string', '0+'),
    ])
SaslHandshakeResponse = build_classes(SASL_HANDSHAKE_RESPONSE)
