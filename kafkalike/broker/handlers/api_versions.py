"""ApiVersions (18): the versions this broker serves, built from the handler registry."""
from __future__ import annotations

import re

from kafkalike.broker.registry import HANDLERS, RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.api_versions import ApiVersionsResponse

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def valid_client_software(name: str, version: str) -> bool:
    """Kafka's check on an ApiVersions v3+ client software name and version (KIP-511): a
    request that fails it is answered INVALID_REQUEST, and the request log does not
    register the connection's software."""
    return bool(_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(version))


def advertised() -> list:
    """Every range starts at 0, as Kafka 2.8's do: older librdkafka detects features by
    checking that particular old versions fall inside it. Versions below what a handler
    implements are answered with UNSUPPORTED_VERSION (as Kafka 4.0 does)."""
    return [ApiVersionsResponse.ApiVersion(api_key=key, min_version=0, max_version=reg.max_version)
            for key, reg in sorted(HANDLERS.items())]


def _error(request, version: int, code: ErrorCode) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=int(code), api_keys=advertised())


@handler(18, error_response=_error)
def handle_api_versions(ctx: RequestContext, request) -> ApiVersionsResponse:
    if request is None:
        # A version newer than ours: answered as v0 with the ranges we do serve, so the
        # client can retry with one of them (the network layer encodes this at v0).
        return _error(None, 0, ErrorCode.UNSUPPORTED_VERSION)
    if ctx.version >= 3 and not valid_client_software(request.client_software_name or "",
                                                      request.client_software_version or ""):
        return _error(request, ctx.version, ErrorCode.INVALID_REQUEST)
    return ApiVersionsResponse(error_code=0, api_keys=advertised())
