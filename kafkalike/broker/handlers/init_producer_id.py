"""InitProducerId (22): a producer id for an idempotent or a transactional producer.

- transactional_id null (an idempotent producer): a new producer id from this broker's
  ProducerIdManager with epoch 0, always. Kafka's coordinator "blindly accepts" these,
  including v3+ requests that carry the producer's old id and epoch (KIP-360): for an
  idempotent producer the epoch bump after UNKNOWN_PRODUCER_ID happens in the client,
  and a fresh id is what a broker returns when asked.
- transactional_id empty: INVALID_REQUEST (the coordinator's own check).
- any other transactional id: the transaction coordinator's answer (a new epoch, the
  fencing of older instances; kafkalike/coordinator/transaction/coordinator.py). Before
  v4 (KIP-588) PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH, which older clients
  know.

A request carrying only one of producer_id and producer_epoch is INVALID_REQUEST, as
KafkaApis checks before asking the coordinator.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.handlers.transactions import fenced_for, transaction_coordinator
from kafkalike.broker.authorizer.service import TOPIC, TRANSACTIONAL_ID, Op
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
    # Authorization first, as KafkaApis: WRITE on the transactional id (an empty one too),
    # else IDEMPOTENT_WRITE on the cluster or, KIP-679, WRITE on some topic.
    authz = ctx.authorizer
    if request.transactional_id is not None:
        if not authz.authorize(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
            return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not authz.authorize_cluster(ctx, Op.IDEMPOTENT_WRITE, log_denied=False) and not (
            authz.allowed_by_resource_type(ctx.principal, ctx.client_host, Op.WRITE, TOPIC, api=ctx.api_key)):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    given_id = request.producer_id if ctx.version >= 3 else NO_PRODUCER_ID
    given_epoch = request.producer_epoch if ctx.version >= 3 else NO_PRODUCER_EPOCH
    if (given_id == NO_PRODUCER_ID) != (given_epoch == NO_PRODUCER_EPOCH):
        return _error(ErrorCode.INVALID_REQUEST)
    if request.transactional_id is not None:
        if request.transactional_id == "":
            return _error(ErrorCode.INVALID_REQUEST)
        coordinator = transaction_coordinator(ctx)
        if coordinator is None:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        expected = None if given_id == NO_PRODUCER_ID else (given_id, given_epoch)
        d = coordinator.init_producer_id(request.transactional_id, request.transaction_timeout_ms, expected)
        return d.addCallback(lambda r: InitProducerIdResponse(
            error_code=int(fenced_for(ctx.version, 4, r.error)), producer_id=r.producer_id,
            producer_epoch=r.producer_epoch))
    manager = ctx.producer_ids
    if manager is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    d: defer.Deferred = manager.generate_producer_id()
    d.addCallbacks(lambda pid: InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=0),
                   lambda failure: _error(ErrorCode.UNKNOWN_SERVER_ERROR))
    return d
