"""EndTxn (API key 26): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

END_TXN_REQUEST = Message(
    'EndTxnRequest', 'request', valid='0-3', flexible='3+',
    api_key=26, listeners=('zkBroker',),
    fields=[
        F('transactional_id', 'string', '0+', entity_type='transactionalId'),
        F('producer_id', 'int64', '0+', entity_type='producerId'),
        F('producer_epoch', 'int16', '0+'),
        F('committed', 'bool', '0+'),
    ])
EndTxnRequest = build_classes(END_TXN_REQUEST)

END_TXN_RESPONSE = Message(
    'EndTxnResponse', 'response', valid='0-3', flexible='3+',
    api_key=26,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
    ])
EndTxnResponse = build_classes(END_TXN_RESPONSE)
