"""ApiVersions (API key 18): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

API_VERSIONS_REQUEST = Message(
    'ApiVersionsRequest', 'request', valid='0-3', flexible='3+',
    api_key=18, listeners=('zkBroker', 'broker', 'controller'),
    fields=[
        F('client_software_name', 'string', '3+', ignorable=True),
        F('client_software_version', 'string', '3+', ignorable=True),
    ])
ApiVersionsRequest = build_classes(API_VERSIONS_REQUEST)

API_VERSIONS_RESPONSE = Message(
    'ApiVersionsResponse', 'response', valid='0-3', flexible='3+',
    api_key=18,
    fields=[
        F('error_code', 'int16', '0+'),
        F('api_keys', '[]ApiVersion', '0+', fields=[
            F('api_key', 'int16', '0+', map_key=True),
            F('min_version', 'int16', '0+'),
            F('max_version', 'int16', '0+'),
        ]),
        F('throttle_time_ms', 'int32', '1+', ignorable=True),
        F('supported_features', '[]SupportedFeatureKey', '3+', tagged='3+', tag=0, fields=[
            F('name', 'string', '3+', map_key=True),
            F('min_version', 'int16', '3+'),
            F('max_version', 'int16', '3+'),
        ]),
        F('finalized_features_epoch', 'int64', '3+', tagged='3+', tag=1, default=-1, ignorable=True),
        F('finalized_features', '[]FinalizedFeatureKey', '3+', tagged='3+', tag=2, fields=[
            F('name', 'string', '3+', map_key=True),
            F('max_version_level', 'int16', '3+'),
            F('min_version_level', 'int16', '3+'),
        ]),
    ])
ApiVersionsResponse = build_classes(API_VERSIONS_RESPONSE)
