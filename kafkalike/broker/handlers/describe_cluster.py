"""DescribeCluster (60): the brokers and controller as this broker knows them."""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse


@handler(60)
def handle_describe_cluster(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    cache = ctx.metadata
    listener = ctx.listener_name
    brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=b, host=ep.host, port=ep.port, rack=rack)
               for b, ep, rack in cache.broker_endpoints(listener)]
    response = DescribeClusterResponse(error_code=0, cluster_id=ctx.cluster_id,
                                       controller_id=cache.controller_id, brokers=brokers)
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = (ctx.authorizer.cluster_operations(ctx)
                                                  if ctx.authorizer.authorize_cluster(ctx, Op.DESCRIBE) else 0)
    return response
