"""UpdateFeatures (API key 57): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

UPDATE_FEATURES_REQUEST = Message(
    'UpdateFeaturesRequest', 'request', valid='0', flexible='0+',
    api_key=57, listeners=('zkBroker',),
    fields=[
        F('timeout_ms', 'int32', '0+', default=60000),
        F('feature_updates', '[]FeatureUpdateKey', '0+', fields=[
            F('feature', 'string', '0+', map_key=True),
            F('max_version_level', 'int16', '0+'),
            F('allow_downgrade', 'bool', '0+'),
        ]),
    ])
UpdateFeaturesRequest = build_classes(UPDATE_FEATURES_REQUEST)

UPDATE_FEATURES_RESPONSE = Message(
    'UpdateFeaturesResponse', 'response', valid='0', flexible='0+',
    api_key=57,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('results', '[]UpdatableFeatureResult', '0+', fields=[
            F('feature', 'string', '0+', map_key=True),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ])
UpdateFeaturesResponse = build_classes(UPDATE_FEATURES_RESPONSE)
