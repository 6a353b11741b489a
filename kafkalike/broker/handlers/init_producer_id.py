"""InitProducerId (22): a producer id for an idempotent producer.

Kafka 2.8 answers in three ways, and so do we:

- transactional_id null (an idempotent producer): a new producer id from this broker's
  ProducerIdManager with epoch 0, always. Kafka's coordinator "blindly accepts" these,
  including v3+ requests that carry the producer's old id and epoch (KIP-360): for an
  idempotent producer the epoch bump after UNKNOWN_PRODUCER_ID happens in the client,
  and a fresh id is what a broker returns when asked. We do the same rather than invent
  a bump Kafka does not make.
- transactional_id empty: INVALID_REQUEST (the coordinator's own check).
- any other transactional id: NOT_COORDINATOR, what a Kafka broker answers when it is
  not the transaction coordinator of that id; this broker runs none yet (see
  transactions.py), so the client keeps looking for one until its timeout.

A request carrying only one of producer_id and producer_epoch is INVALID_REQUEST, as
KafkaApis checks before asking the coordinator.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def _error(code: ErrorCode) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=int(code), producer_id=NO_PRODUCER_ID,
                                  producer_epoch=NO_PRODUCER_EPOCH)


def _error_response(request, version: int, code: ErrorCode) -> InitProducerIdResponse:
    return _error(code)


@handler(22, error_response=_error_response)
def handle_init_producer_id(ctx: RequestContext, request: InitProducerIdRequest):
    given_id = request.producer_id if ctx.version >= 3 else NO_PRODUCER_ID
    given_epoch = request.producer_epoch if ctx.version >= 3 else NO_PRODUCER_EPOCH
    if (given_id == NO_PRODUCER_ID) != (given_epoch == NO_PRODUCER_EPOCH):
        return _error(ErrorCode.INVALID_REQUEST)
    if request.transactional_id is not None:
        return _error(ErrorCode.INVALID_REQUEST if request.transactional_id == ""
                      else ErrorCode.NOT_COORDINATOR)
    manager = ctx.producer_ids
    if manager is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    d: defer.Deferred = manager.generate_producer_id()
    d.addCallbacks(lambda pid: InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=0),
                   lambda failure: _error(ErrorCode.UNKNOWN_SERVER_ERROR))
    return d
