"""Every public operator checks its arguments where it is built.

A wrong type used to be taken as it was and failed later: with an ``AttributeError`` from inside
a subscription or a timer (``'str' object has no attribute 'now'``), or only on the first failure
a retry or a rescue had to handle, or never (an ``on_wait`` of ``3`` until a wait came). Each
case here is a ``ConfigError`` whose message starts with the operator and the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex.testing import TestScheduler

import rxturn.operators as rxops
from rxturn import HedgePolicy, HedgeTarget
from rxturn.errors import ConfigError, ServerError
from rxturn.testing.virtual import leftovers


def _never(_: object = None) -> reactivex.Observable[Any]:
    return reactivex.never()


POLICY = HedgePolicy((HedgeTarget("backup"),), delay=1.0)
#: the operators, untyped: every case below passes a wrong type on purpose
loose: Any = rxops

CASES: list[tuple[str, Callable[[], object], str]] = [
    ("attempt_guard-progress", lambda: loose.attempt_guard("p"), "attempt_guard(progress=...)"),
    ("deadlines-progress", lambda: loose.deadlines(1, 2, progress="p"), "deadlines(progress=...)"),
    (
        "deadlines-scheduler",
        lambda: loose.deadlines(1, 2, scheduler="s"),
        "deadlines(scheduler=...) must be a reactivex scheduler",
    ),
    ("total-scheduler", lambda: loose.total_deadline(5, scheduler=3), "total_deadline(scheduler"),
    ("total-progress", lambda: loose.total_deadline(5, progress=3), "total_deadline(progress"),
    ("ladder-retry", lambda: loose.retry_ladder("x"), "retry_ladder(retry=...) must be a Retry"),
    ("ladder-rate-limit", lambda: loose.retry_ladder(rate_limit=3), "retry_ladder(rate_limit="),
    ("ladder-rng", lambda: loose.retry_ladder(rng="x"), "retry_ladder(rng=...) must be a random"),
    ("ladder-on-wait", lambda: loose.retry_ladder(on_wait=3), "retry_ladder(on_wait=...)"),
    ("ladder-scheduler", lambda: loose.retry_ladder(scheduler="s"), "retry_ladder(scheduler="),
    ("ladder-progress", lambda: loose.retry_ladder(progress="p"), "retry_ladder(progress="),
    ("rescue-create", lambda: loose.rescue(None), "rescue(create=...) must be a callable"),
    ("rescue-when", lambda: loose.rescue(_never, when=3), "rescue(when=...)"),
    ("rescue-scheduler", lambda: loose.rescue(_never, scheduler=3), "rescue(scheduler="),
    ("rescue-progress", lambda: loose.rescue(_never, progress=3), "rescue(progress="),
    (
        "cancellable-token",
        lambda: loose.cancellable("t"),
        "cancellable(token=...) must be a Cancel",
    ),
    ("cancellable-progress", lambda: loose.cancellable(None, progress=1), "cancellable(progress"),
    ("gate-limiter", lambda: loose.rate_limit_gate("l"), "rate_limit_gate(limiter=...)"),
    ("gate-key", lambda: loose.rate_limit_gate(None, 3), "rate_limit_gate(key=...) must be a str"),
    ("gate-scheduler", lambda: loose.rate_limit_gate(None, scheduler=1), "rate_limit_gate(sched"),
    ("scrubbed", lambda: loose.scrubbed(3), "scrubbed(scrub=...) must be a callable"),
    ("annotate", lambda: loose.annotate_progress(None), "annotate_progress(progress=...) must be"),
    ("give-up", lambda: loose.give_up_beyond_deadline(None), "give_up_beyond_deadline(progress="),
    ("hedge-policy", lambda: loose.hedge("p", _never, model="m"), "hedge(policy=...) must be a"),
    ("hedge-open", lambda: loose.hedge(POLICY, None, model="m"), "hedge(open_target=...)"),
    ("hedge-model", lambda: loose.hedge(POLICY, _never, model=3), "hedge(model=...) must be a str"),
    ("hedge-blocked", lambda: loose.hedge(POLICY, _never, model="m", blocked=1), "hedge(blocked="),
    (
        "hedge-rate-limited",
        lambda: loose.hedge(POLICY, _never, model="m", rate_limited="no"),
        "hedge(rate_limited=...) must be True or False",
    ),
    ("hedge-watcher", lambda: loose.hedge(POLICY, _never, model="m", watcher=3), "hedge(watcher="),
    (
        "hedge-on-hedge",
        lambda: loose.hedge(POLICY, _never, model="m", on_hedge=1),
        "hedge(on_hedge",
    ),
    ("hedge-scheduler", lambda: loose.hedge(POLICY, _never, model="m", scheduler=1), "hedge(sched"),
]


@pytest.mark.parametrize(("build", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_wrong_argument_is_a_config_error_naming_it(
    build: Callable[[], object], says: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        build()
    assert str(raised.value).startswith(says), str(raised.value)


def test_the_right_arguments_still_build() -> None:
    scheduler = TestScheduler()
    progress = rxops.TurnProgress(lambda: float(scheduler.clock))
    operators: list[Any] = [
        rxops.attempt_guard(progress),
        rxops.deadlines(1, 2, progress=progress, scheduler=scheduler),
        rxops.total_deadline(5, progress=progress, scheduler=scheduler),
        rxops.retry_ladder(progress=progress, scheduler=scheduler, on_wait=print),
        rxops.rescue(_never, when=lambda _: True, progress=progress, scheduler=scheduler),
        rxops.cancellable(None, progress=progress),
        rxops.rate_limit_gate(None, "http://x", progress=progress, scheduler=scheduler),
        rxops.scrubbed(None),
        rxops.annotate_progress(progress),
        rxops.give_up_beyond_deadline(progress),
        rxops.hedge(POLICY, _never, model="m", scheduler=scheduler),
    ]
    assert all(callable(op) for op in operators)


def test_a_rescue_whose_create_returns_no_observable_is_a_config_error() -> None:
    """It escaped into the scheduler as "'int' object has no attribute 'subscribe'"."""
    scheduler = TestScheduler()
    seen: list[object] = []
    rescued = rxops.rescue(lambda: 3, when=lambda _: True, timeout=5.0)  # pyright: ignore[reportArgumentType]
    reactivex.throw(ServerError("down")).pipe(rescued).subscribe(
        seen.append, seen.append, scheduler=scheduler
    )
    scheduler.advance_by(10.0)
    (error,) = seen
    assert isinstance(error, ConfigError)
    assert str(error) == "rescue: create() must return an Observable of the reply, got int 3"
    assert leftovers(scheduler) == []  # the timers of the race and the rescue are gone


@pytest.mark.parametrize(
    ("args", "kwargs", "says"),
    [
        (("clock",), {}, "TurnProgress: clock must be a callable returning seconds, got str"),
        ((float,), {"total": "300"}, "TurnProgress: total must be a finite number of seconds"),
        ((float,), {"total": float("nan")}, "TurnProgress: total must be a finite number"),
        ((float,), {"total": True}, "TurnProgress: total must be a finite number"),
    ],
    ids=["clock", "total-str", "total-nan", "total-bool"],
)
def test_turn_progress_checks_its_clock_and_total(
    args: tuple[Any, ...], kwargs: dict[str, Any], says: str
) -> None:
    """A string clock was a TypeError ("'str' object is not callable"), a string total one
    from an addition, and a NaN total made every deadline comparison false."""
    with pytest.raises(ConfigError) as raised:
        rxops.TurnProgress(*args, **kwargs)
    assert str(raised.value).startswith(says), str(raised.value)
    assert rxops.TurnProgress(float, total=300).deadline_at == 300.0


def test_a_hedge_whose_open_target_returns_no_observable_ends_the_race() -> None:
    """The hedge's "'int' object has no attribute 'subscribe'" was taken for a racer's failure:
    the race went on with the primary, and the mistake was never reported."""
    scheduler = TestScheduler()
    seen: list[object] = []
    primary = reactivex.never()
    race = rxops.hedge(POLICY, lambda _: 3, model="m", scheduler=scheduler)  # pyright: ignore[reportArgumentType]
    primary.pipe(race).subscribe(seen.append, seen.append, scheduler=scheduler)
    scheduler.advance_by(5.0)
    (error,) = seen
    assert isinstance(error, ConfigError)
    assert str(error) == (
        "hedge: open_target must return an Observable of the target's request, got int 3"
    )
    assert leftovers(scheduler) == []  # the timers of the race and the rescue are gone
