"""The API catalogue and request/response framing.

One table of every API the declarations know, keyed by api key; the broker's handler
registry and its ApiVersions answer are built on top of it, and clients use the same
framing functions, so both sides agree on header versions by construction.
"""
from __future__ import annotations

import importlib
import pkgutil
import struct
from dataclasses import dataclass

from kafkalike.protocol import messages
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.fast import fetch as fast_fetch
from kafkalike.protocol.fast import fetch_request as fast_fetch_request
from kafkalike.protocol.fast import produce as fast_produce
from kafkalike.protocol.fast.header import RequestHeaderParser
from kafkalike.protocol.messages.headers import RequestHeader, ResponseHeader
from kafkalike.protocol.schema import MessageData, UnsupportedVersionError, parse_versions
from kafkalike.protocol.types import Reader, Writer

_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class ApiSpec:
    key: int
    name: str
    request: type[MessageData]
    response: type[MessageData]

    @property
    def versions(self) -> tuple[int, int]:
        return self.request.SCHEMA.valid_range

    def request_header_version(self, version: int) -> int:
        if self.key == CONTROLLED_SHUTDOWN and version == 0:
            return 0  # ControlledShutdown v0 predates client ids in headers
        return 2 if self.request.SCHEMA.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        if self.key == API_VERSIONS:
            return 0  # clients parse it before they know the broker's versions (KIP-511)
        return 1 if self.response.SCHEMA.is_flexible(version) else 0


CONTROLLED_SHUTDOWN = 7
API_VERSIONS = 18


def _load() -> dict[int, ApiSpec]:
    apis: dict[int, ApiSpec] = {}
    for info in pkgutil.iter_modules(messages.__path__):
        module = importlib.import_module(f"{messages.__name__}.{info.name}")
        classes = [v for v in vars(module).values()
                   if isinstance(v, type) and issubclass(v, MessageData) and v.API_KEY is not None]
        requests = [c for c in classes if c.SCHEMA.type == "request"]
        responses = [c for c in classes if c.SCHEMA.type == "response"]
        for req in requests:
            resp = next(r for r in responses if r.API_KEY == req.API_KEY)
            apis[req.API_KEY] = ApiSpec(req.API_KEY, req.__name__[: -len("Request")], req, resp)
    return dict(sorted(apis.items()))


APIS: dict[int, ApiSpec] = _load()
API_NAMES: dict[str, int] = {spec.name: key for key, spec in APIS.items()}


# -- framing ---------------------------------------------------------------------------
# A frame on the wire is a 4-byte big-endian size followed by that many bytes. The
# functions below work on the bytes after the size; transports add and strip it.


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: MessageData) -> bytes:
    spec = APIS[api_key]
    w = Writer()
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    header.encode_into(w, spec.request_header_version(version))
    body.encode_into(w, version)
    return w.getvalue()


def decode_request_header(frame) -> tuple[RequestHeader, Reader]:
    """Read the header; the Reader is left at the body.

    The header's own version depends on the api key and version it contains, so the
    first four fields are read as v1 and the tagged section added for flexible APIs.
    Unknown api keys yield a header with the reader positioned after client_id.
    """
    r = Reader(frame)
    api_key = r.int16()
    version = r.int16()
    correlation_id = r.int32()
    spec = APIS.get(api_key)
    header_version = spec.request_header_version(version) if spec else 1
    client_id = r.string(nullable=True) if header_version >= 1 else None
    if header_version >= 2:
        count = r.uvarint()
        for _ in range(count):
            r.uvarint()
            r.skip(r.uvarint())
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    return header, r


def _header_parser() -> RequestHeaderParser:
    flexible = {}
    for key, spec in APIS.items():
        rng = parse_versions(spec.request.SCHEMA.flexible)
        if rng is not None:
            flexible[key] = rng
    v0 = frozenset((key, v) for key, spec in APIS.items() for v in range(spec.versions[0], spec.versions[1] + 1)
                   if spec.request_header_version(v) == 0)
    return RequestHeaderParser(flexible, v0)


# The broker's header parse: (api key, version, correlation id, client id, body position),
# equal to decode_request_header's, in one struct call.
parse_request_header = _header_parser().parse


def decode_request_body(api_key: int, version: int, frame, pos: int) -> MessageData:
    """The body of a request whose header ends at `pos`: Produce and Fetch by their
    dedicated decoders (kafkalike.protocol.fast), the rest by the generic one."""
    if api_key == 0 and 0 <= version <= 9:
        return fast_produce.decode_produce_request(frame, pos, version)
    if api_key == 1 and 0 <= version <= 12:
        return fast_fetch_request.decode_fetch_request(frame, pos, version)
    spec = APIS.get(api_key)
    if spec is None:
        raise ProtocolDecodeError(f"unknown api key {api_key}")
    return spec.request.read_from(Reader(frame, pos), version)


def decode_request(frame) -> tuple[RequestHeader, MessageData]:
    header, r = decode_request_header(frame)
    spec = APIS.get(header.request_api_key)
    if spec is None:
        raise ProtocolDecodeError(f"unknown api key {header.request_api_key}")
    body = spec.request.read_from(r, header.request_api_version)
    return header, body


def encode_response(api_key: int, version: int, correlation_id: int, body: MessageData,
                    keep_files_from: int | None = None) -> list:
    """The response frame (without its size prefix) as a list of buffers.

    Produce and Fetch answers go through their dedicated encoders; with
    `keep_files_from`, a Fetch answer's record sets that are file ranges of at least that
    many bytes stay in the list as they are, for the listener to sendfile.
    """
    if api_key == 0 and 0 <= version <= 9:
        return fast_produce.encode_produce_response(version, correlation_id, body)
    if api_key == 1 and 0 <= version <= 12:
        return fast_fetch.encode_fetch_response(version, correlation_id, body, keep_files_from)
    return encode_response_generic(api_key, version, correlation_id, body)


def encode_response_generic(api_key: int, version: int, correlation_id: int, body: MessageData) -> list:
    """encode_response through the schema walker, for every API: the reference the
    dedicated encoders are tested against."""
    spec = APIS[api_key]
    w = Writer()
    ResponseHeader(correlation_id=correlation_id).encode_into(w, spec.response_header_version(version))
    body.encode_into(w, version)
    return w.chunks()


def decode_response(api_key: int, version: int, frame) -> tuple[int, MessageData]:
    if api_key == 0 and 0 <= version <= 9:
        return fast_produce.decode_produce_response(frame, version)
    spec = APIS[api_key]
    r = Reader(frame)
    header = ResponseHeader.read_from(r, spec.response_header_version(version))
    return header.correlation_id, spec.response.read_from(r, version)


def size_prefixed(chunks: list) -> list:
    total = sum(len(c) for c in chunks)
    return [_SIZE.pack(total)] + chunks


__all__ = ["APIS", "API_NAMES", "ApiSpec", "encode_request", "decode_request", "decode_request_body",
           "decode_request_header", "parse_request_header", "encode_response", "encode_response_generic",
           "decode_response", "size_prefixed",
           "UnsupportedVersionError"]
