"""How a broker fences the controller's requests by controller epoch and broker epoch.

The case that matters in a restart: the controller sees the broker's new registration
and sends it UpdateMetadata and LeaderAndIsr carrying the new broker epoch, which can
arrive before the broker's own registration call has returned that epoch to it.
Those requests are not stale; only ones addressed to an older incarnation are.
"""
from __future__ import annotations

from types import SimpleNamespace

from kafkalike.broker.authorizer import ALLOW_ALL
from kafkalike.broker.handlers.controller_requests import handle_update_metadata
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.update_metadata import UpdateMetadataRequest


def deliver(broker_epoch_known: int, request_broker_epoch: int, controller_epoch: int = 3,
            controller_epoch_seen: int = 3):
    applied = []
    server = SimpleNamespace(broker_epoch=broker_epoch_known, controller_epoch_seen=controller_epoch_seen)
    ctx = SimpleNamespace(epochs=server, version=7,
                          metadata=SimpleNamespace(update=lambda request, version: applied.append(request)),
                          groups=None, admin=SimpleNamespace(on_metadata_update=lambda: None), authorizer=ALLOW_ALL)
    request = UpdateMetadataRequest(controller_id=1, controller_epoch=controller_epoch,
                                    broker_epoch=request_broker_epoch, topic_states=[], live_brokers=[])
    response = handle_update_metadata(ctx, request)
    return ErrorCode(response.error_code), applied, server


def test_request_for_the_registration_still_in_flight_is_applied():
    # Registered with epoch 481, but the broker does not know it yet (-1).
    error, applied, _ = deliver(broker_epoch_known=-1, request_broker_epoch=481)
    assert error == ErrorCode.NONE and len(applied) == 1


def test_request_for_the_current_epoch_or_unknown_epoch_is_applied():
    assert deliver(481, 481)[0] == ErrorCode.NONE
    assert deliver(481, -1)[0] == ErrorCode.NONE


def test_request_addressed_to_an_earlier_incarnation_is_stale():
    error, applied, _ = deliver(broker_epoch_known=481, request_broker_epoch=300)
    assert error == ErrorCode.STALE_BROKER_EPOCH and not applied


def test_request_from_an_older_controller_is_stale_and_a_newer_one_is_remembered():
    error, applied, _ = deliver(481, 481, controller_epoch=2, controller_epoch_seen=3)
    assert error == ErrorCode.STALE_CONTROLLER_EPOCH and not applied
    error, applied, server = deliver(481, 481, controller_epoch=4, controller_epoch_seen=3)
    assert error == ErrorCode.NONE and server.controller_epoch_seen == 4
