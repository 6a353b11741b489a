"""Authorization: what handlers ask through `ctx.authorizer` (service.py), and Kafka 2.8's
AclAuthorizer behind it when authorizer.class.name names it (acl_authorizer.py)."""
from kafkalike.broker.authorizer.service import ALLOW_ALL, Authorizer

__all__ = ["ALLOW_ALL", "Authorizer"]
