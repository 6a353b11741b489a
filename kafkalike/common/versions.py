"""Kafka 2.8's inter-broker protocol and message format versions (Scala's ApiVersion).

`inter.broker.protocol.version` and `log.message.format.version` on the broker and
`message.format.version` on a topic all name one of these; feature gates compare them.
"""
from __future__ import annotations

# The release this is: what --version and the broker's AppInfoParser lines print.
KAFKA_VERSION = "2.8.0"
KAFKA_COMMIT_ID = "kafkalike"

# Every inter-broker protocol / message format version Kafka 2.8 knows, oldest first.
API_VERSIONS: tuple[str, ...] = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0",
    "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1",
    "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0",
    "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1",
)
LATEST_API_VERSION = API_VERSIONS[-1]
# The short names ("2.8", "0.10.2"), each meaning its latest IV.
SHORT_API_VERSIONS = frozenset(v.split("-")[0] for v in API_VERSIONS)

_INDEX: dict[str, int] = {}
for _i, _v in enumerate(API_VERSIONS):
    _INDEX[_v] = _i
    _INDEX[_v.split("-")[0]] = _i  # a short name means its latest IV


def resolve_api_version(text: str) -> str:
    """ApiVersion.apply: '2.8', '2.8.1' and '2.8-IV1' all mean 2.8-IV1; '0.10.2.1' means 0.10.2."""
    parts = text.split(".")
    key = ".".join(parts[:3] if text.startswith("0.") else parts[:2])
    if key not in _INDEX:
        raise ValueError(f"Version `{text}` is not a valid version")
    return API_VERSIONS[_INDEX[key]]


def api_version_at_least(version: str, minimum: str) -> bool:
    """IBP feature gates, e.g. api_version_at_least(ibp, '2.7-IV2') for AlterIsr."""
    return _INDEX[resolve_api_version(version)] >= _INDEX[minimum]


def record_version(version: str) -> int:
    """The record batch magic a message format version writes: 0, 1 or 2."""
    index = _INDEX[resolve_api_version(version)]
    if index < _INDEX["0.10.0-IV1"]:
        return 0
    return 1 if index < _INDEX["0.11.0-IV0"] else 2
