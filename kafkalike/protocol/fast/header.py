"""The request header in one struct.unpack_from, for every request the broker takes.

Equal to kafkalike.protocol.api.decode_request_header (the property tests hold them
together): header v0 has no client id (ControlledShutdown v0), v1 a nullable int16
string, v2 (flexible request versions) adds a tagged-field section, whose fields are
skipped.
"""
from __future__ import annotations

import struct

from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.fast.wire import uvarint

_FIXED = struct.Struct(">hhih")     # api key, api version, correlation id, client id length
_FIXED_V0 = struct.Struct(">hhi")


class RequestHeaderParser:
    """Built once from the API table: `flexible` maps an api key to the (lowest, highest)
    flexible request version, `v0_only` names the (api key, version) pairs whose header
    is v0."""

    def __init__(self, flexible: dict[int, tuple[int, int]], v0: frozenset[tuple[int, int]]):
        self._flexible = flexible
        self._v0 = v0
        self._client_ids: dict[bytes, str] = {}

    def parse(self, frame) -> tuple[int, int, int, str | None, int]:
        """(api key, api version, correlation id, client id, position of the body)."""
        end = len(frame)
        if end < 10:
            if end < 8:
                raise ProtocolDecodeError(f"request header needs 8 bytes, the frame has {end}")
            api_key, version, correlation_id = _FIXED_V0.unpack_from(frame, 0)
            if (api_key, version) in self._v0:
                return api_key, version, correlation_id, None, 8
            raise ProtocolDecodeError(f"need 2 bytes at position 8, only {end - 8} remain")
        api_key, version, correlation_id, n = _FIXED.unpack_from(frame, 0)
        if self._v0 and (api_key, version) in self._v0:
            return api_key, version, correlation_id, None, 8
        pos = 10
        if n < 0:
            if n != -1:
                raise ProtocolDecodeError(f"invalid string length {n}")
            client_id = None
        else:
            if n > end - pos:
                raise ProtocolDecodeError(f"string length {n} exceeds the {end - pos} bytes remaining")
            raw = frame[pos:pos + n]
            client_id = self._client_ids.get(raw) if type(raw) is bytes else None
            if client_id is None:
                client_id = self._client_id(raw)
            pos += n
        flex = self._flexible.get(api_key)
        if flex is not None and flex[0] <= version <= flex[1]:
            if pos < end and frame[pos] == 0:
                pos += 1
            else:
                count, pos = uvarint(frame, pos, end)
                for _ in range(count):
                    _tag, pos = uvarint(frame, pos, end)
                    size, pos = uvarint(frame, pos, end)
                    if pos + size > end:
                        raise ProtocolDecodeError(f"need {size} bytes at position {pos}, only {end - pos} remain")
                    pos += size
        return api_key, version, correlation_id, client_id, pos

    def _client_id(self, raw) -> str:
        """Decoded once per distinct client id: a connection sends the same one each time."""
        try:
            client_id = str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(f"string is not valid UTF-8: {exc.reason}") from None
        if type(raw) is bytes and len(self._client_ids) < 1024:
            self._client_ids[raw] = client_id
        return client_id
