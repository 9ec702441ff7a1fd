"""The ``on_wait`` hook the CLI shows waits with: told of each retry wait as it starts, with
what it waits for and for how long, on virtual time."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from reactivex import Observable
from reactivex.disposable import Disposable
from reactivex.testing import TestScheduler

from rxturn.engine.handler import StreamHandler
from rxturn.errors import ServerError, status_error
from rxturn.events import AttemptReset
from rxturn.operators import retry_ladder
from rxturn.resilience.policies import RetryPolicy


def _failing_twice() -> tuple[Observable[Any], list[Exception]]:
    errors: list[Exception] = [
        status_error(429, "slow down", retry_after=2.0),
        ServerError("HTTP 500: boom"),
    ]
    count = 0

    def subscribe(observer: Any, scheduler: Any = None) -> Disposable:
        nonlocal count
        count += 1
        if count <= len(errors):
            observer.on_error(errors[count - 1])
        else:
            observer.on_next("ok")
            observer.on_completed()
        return Disposable()

    return Observable(subscribe), errors


def test_each_wait_is_told_as_it_starts() -> None:
    scheduler = TestScheduler()
    source, errors = _failing_twice()
    waits: list[tuple[float, dict[str, Any]]] = []
    items: list[tuple[float, Any]] = []

    def on_wait(**kwargs: Any) -> None:
        waits.append((scheduler.clock, kwargs))

    source.pipe(
        retry_ladder(RetryPolicy(jitter=0.0), scheduler=scheduler, on_wait=on_wait)
    ).subscribe(lambda item: items.append((scheduler.clock, item)), scheduler=scheduler)
    scheduler.start()

    assert waits == [
        (0.0, {"reason": "rate_limit", "seconds": 2.0, "attempt": 2, "error": errors[0]}),
        (2.0, {"reason": "backoff", "seconds": 0.1, "attempt": 3, "error": errors[1]}),
    ]
    # the AttemptReset of each retry comes once its wait is over
    assert [(t, type(i).__name__) for t, i in items] == [
        (2.0, "AttemptReset"),
        (pytest.approx(2.1), "AttemptReset"),
        (pytest.approx(2.1), "str"),
    ]
    assert [i.attempt for _, i in items if isinstance(i, AttemptReset)] == [2, 3]


def test_a_raising_hook_is_logged_and_the_turn_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    scheduler = TestScheduler()
    source, _ = _failing_twice()
    items: list[Any] = []

    def on_wait(**_: Any) -> None:
        raise RuntimeError("a broken display")

    with caplog.at_level(logging.ERROR, logger="rxturn.operators"):
        source.pipe(
            retry_ladder(RetryPolicy(jitter=0.0), scheduler=scheduler, on_wait=on_wait)
        ).subscribe(items.append, scheduler=scheduler)
        scheduler.start()
    assert items[-1] == "ok"
    assert [r.getMessage() for r in caplog.records] == ["on_wait raised; the turn goes on"] * 2


def test_the_handler_takes_the_hook_and_keeps_the_reference_defaults() -> None:
    def on_wait(**_: Any) -> None: ...

    hooked = StreamHandler(on_wait=on_wait)
    default = StreamHandler.default()
    assert (hooked.retry, hooked.rate_limit, hooked.timeouts) == (
        default.retry,
        default.rate_limit,
        default.timeouts,
    )
