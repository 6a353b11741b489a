"""Kazoo's thread world meets the Twisted reactor here, and only here.

Kazoo answers every *_async call, watch and state change on its own threads. Those
threads never touch our objects: they hand the outcome to the reactor with
reactor.callFromThread, so everything after that runs on the reactor thread, in order,
with no locks. Nothing here blocks, so the reactor never waits on ZooKeeper.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Coroutine, ParamSpec, TypeVar

from kazoo.interfaces import IAsyncResult
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorFromThreads
from twisted.python.failure import Failure

P = ParamSpec("P")
T = TypeVar("T")


def deferred_from_kazoo(reactor: IReactorFromThreads, result: IAsyncResult) -> Deferred[Any]:
    """A Deferred that fires on the reactor thread with the kazoo async call's outcome.

    Cancelling the Deferred only stops us from listening: ZooKeeper may still apply
    the request.
    """
    deferred: Deferred[Any] = Deferred()

    def settle(ok: bool, outcome: Any) -> None:
        if deferred.called:  # cancelled meanwhile
            return
        if ok:
            deferred.callback(outcome)
        else:
            deferred.errback(Failure(outcome))

    def completed(done: IAsyncResult) -> None:  # on a kazoo thread
        if done.successful():
            reactor.callFromThread(settle, True, done.value)
        else:
            reactor.callFromThread(settle, False, done.exception)

    result.rawlink(completed)
    return deferred


def returns_deferred(method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Deferred[T]]:
    """Expose a coroutine method as one returning a Deferred, the broker's currency."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Deferred[T]:
        return Deferred.fromCoroutine(method(*args, **kwargs))

    return wrapper


async def settle_all(deferreds: list[Deferred[T]]) -> list[T | Exception]:
    """Wait for every Deferred of a batch; each item is its result or its exception.

    The requests behind the Deferreds are already on the wire: kazoo pipelines them on
    one connection, so a batch of N reads or writes costs about one round trip.
    """
    outcomes: list[T | Exception] = []
    for deferred in deferreds:
        try:
            outcomes.append(await deferred)
        except Exception as error:  # noqa: BLE001 - handed back to the caller
            outcomes.append(error)
    return outcomes


async def gather(deferreds: list[Deferred[T]]) -> list[T]:
    """Results of a batch in order; the first failure is raised once all have settled."""
    outcomes = await settle_all(deferreds)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
    return outcomes  # type: ignore[return-value]
