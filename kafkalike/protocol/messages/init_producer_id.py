"""InitProducerId (API key 22): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

INIT_PRODUCER_ID_REQUEST = Message(
    'InitProducerIdRequest', 'request', valid='0-4', flexible='2+',
    api_key=22, listeners=('zkBroker',),
    fields=[
        F('transactional_id', 'string', '0+', nullable='0+', entity_type='transactionalId'),
        F('transaction_timeout_ms', 'int32', '0+'),
        F('producer_id', 'int64', '3+', default=-1),
        F('producer_epoch', 'int16', '3+', default=-1),
    ])
InitProducerIdRequest = build_classes(INIT_PRODUCER_ID_REQUEST)

INIT_PRODUCER_ID_RESPONSE = Message(
    'InitProducerIdResponse', 'response', valid='0-4', flexible='2+',
    api_key=22,
    fields=[
        F('throttle_time_ms', 'int32', '0+', ignorable=True),
        F('error_code', 'int16', '0+'),
        F('producer_id', 'int64', '0+', default=-1, entity_type='producerId'),
        F('producer_epoch', 'int16', '0+'),
    ])
InitProducerIdResponse = build_classes(INIT_PRODUCER_ID_RESPONSE)
