"""AddOffsetsToTxn (API key 25): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

ADD_OFFSETS_TO_TXN_REQUEST = Message(
    'AddOffsetsToTxnRequest', 'request', valid='0-3', flexible='3+',
    api_key=25, listeners=('zkBroker',),
    fields=[
        F('transactional_id', 'string', '0+', entity_type='transactionalId'),
        F('producer_id', 'int64', '0+', entity_type='producerId'),
        F('producer_epoch', 'int16', '0+'),
        F('group_id', 'string', '0+', entity_type='groupId'),
    ])
AddOffsetsToTxnRequest = build_classes(ADD_OFFSETS_TO_TXN_REQUEST)

ADD_OFFSETS_TO_TXN_RESPONSE = Message(
    'AddOffsetsToTxnResponse', 'response', valid='0-3', flexible='3+',
    api_key=25,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
    ])
AddOffsetsToTxnResponse = build_classes(ADD_OFFSETS_TO_TXN_RESPONSE)
