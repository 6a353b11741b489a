"""UpdateFeatures (57): finalize cluster-wide feature versions (KIP-584), as Kafka 2.8 does.

Kafka 2.8 turns the feature versioning system on with inter.broker.protocol.version
2.7 or later (the default) but ships no feature for it to version: its brokers
register an empty supported-feature set and /feature finalizes nothing. So only the
controller takes the request (NOT_CONTROLLER elsewhere; the admin client retries
there), and there every update is refused on its own with Kafka's sentence: an empty
name, a version level below 1 without allow_downgrade, the deletion of a feature that
was never finalized, or, for anything else, a feature no broker supports. Nothing is
written. With an older inter.broker.protocol.version the whole request is refused,
"Feature versioning system is disabled.".
"""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.versions import api_version_at_least
from kafkalike.protocol.errors import ErrorCode, default_message
from kafkalike.protocol.messages.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse

FEATURE_VERSIONING_SINCE = "2.7-IV0"
NOT_CONTROLLER = "This is not the correct controller for this cluster."
DISABLED = "Feature versioning system is disabled."
EMPTY_NAME = "Feature name can not be empty."
DELETE_MISSING = "Can not delete non-existing finalized feature."
NOT_SUPPORTED = "Could not apply finalized feature update because the provided feature is not supported."


def _top_level(request, version: int, code: ErrorCode, message: str | None = None) -> UpdateFeaturesResponse:
    return UpdateFeaturesResponse(error_code=int(code), error_message=message, results=[])


def refusal(update) -> str:
    """Why an update cannot apply when no feature is supported or finalized."""
    if update.feature == "":
        return EMPTY_NAME
    if update.allow_downgrade and update.max_version_level < 1:
        return DELETE_MISSING
    if update.max_version_level < 1:
        return (f"Can not provide maxVersionLevel: {update.max_version_level} less than 1 without "
                "setting the allowDowngrade flag to true in the request.")
    return NOT_SUPPORTED


@handler(57, error_response=_top_level)
def handle_update_features(ctx: RequestContext, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    if not ctx.authorizer.authorize_cluster(ctx, Op.ALTER):
        # ApiError(CLUSTER_AUTHORIZATION_FAILED): with the error's message.
        return _top_level(request, ctx.version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                          default_message(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    if not ctx.controller.active:
        return _top_level(request, ctx.version, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER)
    if not api_version_at_least(ctx.config.inter_broker_protocol_version, FEATURE_VERSIONING_SINCE):
        return _top_level(request, ctx.version, ErrorCode.INVALID_REQUEST, DISABLED)
    refusals = {u.feature: refusal(u) for u in request.feature_updates}
    R = UpdateFeaturesResponse
    return R(error_code=0, error_message=None, results=[
        R.UpdatableFeatureResult(feature=name, error_code=int(ErrorCode.INVALID_REQUEST), error_message=message)
        for name, message in refusals.items()])
