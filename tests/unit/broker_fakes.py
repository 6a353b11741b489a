"""BrokerServices for handler tests: what a test exercises, given as fakes or real
managers, and None for the rest (a handler reaching one the test did not expect fails
loudly)."""
from __future__ import annotations

from dataclasses import MISSING, fields

from kafkalike.broker.registry import BrokerEpochs, BrokerServices


def services(**given) -> BrokerServices:
    # Services with a default of their own (the request metrics) keep it.
    values: dict = {f.name: None for f in fields(BrokerServices)
                    if f.default is MISSING and f.default_factory is MISSING}
    values.update(broker_id=0, epochs=BrokerEpochs())
    values.update(given)
    return BrokerServices(**values)
