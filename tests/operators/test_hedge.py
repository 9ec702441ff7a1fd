"""The ``hedge`` operator on virtual time: each fault class, exact to the instant."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
from reactivex import Observable
from reactivex.disposable import Disposable
from reactivex.testing import TestScheduler

from rxturn.errors import (
    AuthenticationError,
    BadRequestError,
    OverloadedError,
    RateLimitError,
    ReadError,
    ServerError,
    TruncatedStreamError,
)
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.messages import Usage
from rxturn.operators import hedge
from rxturn.resilience.hedge import HedgePolicy, HedgeTarget
from rxturn.testing.virtual import (
    Script,
    Tracked,
    drive,
    leftovers,
    on_completed,
    on_error,
    on_next,
)

BACKUP = HedgeTarget("backup")
CLIENT = object()


def slow(first_content_at: float, text: str = "slow", *, start: float = 0.01) -> Script:
    """A reply whose preamble comes at once and whose content comes late."""
    return [
        on_next(start, MessageStart(id="p", model="primary")),
        on_next(start, MessageDelta(None, Usage(input_tokens=11, output_tokens=0))),
        on_next(first_content_at, PartStart(0)),
        on_next(first_content_at, Delta(0, text)),
        on_next(first_content_at + 0.01, PartStop(0)),
        on_next(
            first_content_at + 0.01,
            MessageDelta("end_turn", Usage(input_tokens=11, output_tokens=1)),
        ),
        on_next(first_content_at + 0.01, MessageStop()),
        on_completed(first_content_at + 0.02),
    ]


class Rig:
    """A race between ``primary`` and one scripted timeline per target model."""

    def __init__(
        self,
        primary: Script,
        targets: dict[str, Script],
        *,
        policy: HedgePolicy | None = None,
        rate_limited: bool = False,
        blocked: Any = None,
    ) -> None:
        self.scheduler = TestScheduler()
        self.log: list[tuple[float, str]] = []
        self.primary = Tracked(self.scheduler, primary)
        self.scripts = targets
        self.opened: dict[str, Tracked] = {}
        self.policy = policy or HedgePolicy((BACKUP,), delay=2.0)
        self.hedges: list[dict[str, object]] = []
        self.skips: list[dict[str, object]] = []
        self.watch: list[tuple[object, ...]] = []
        rig = self

        class Watcher:
            def racer_started(self, index: int, model: str) -> contextvars.Context | None:
                rig.watch.append(("started", index, model, rig.now))
                return None

            def racer_ended(
                self,
                index: int,
                error: BaseException | None,
                usage: Usage | None,
                *,
                outcome: str | None = None,
                disposed: bool = False,
            ) -> None:
                what = outcome or ("disposed" if disposed else type(error).__name__)
                rig.watch.append(("ended", index, what, usage, rig.now))

            def racer_adopted(self, index: int, *, won: bool = False) -> None:
                rig.watch.append(("won" if won else "adopted", index, rig.now))

        self.operator = hedge(
            self.policy,
            self.open_target,
            model="primary",
            client=CLIENT,
            rate_limited=rate_limited,
            blocked=blocked,
            watcher=Watcher(),
            on_hedge=self._hedged,
            on_skip=self._skipped,
            scheduler=self.scheduler,
        )
        self.primary.observable = self._logged("primary", self.primary)

    def _hedged(self, **facts: object) -> None:
        self.hedges.append(facts)

    def _skipped(self, **facts: object) -> None:
        self.skips.append(facts)

    @property
    def now(self) -> float:
        return float(self.scheduler.clock)

    def _logged(self, name: str, tracked: Tracked) -> Observable[Any]:
        inner = tracked.observable

        def subscribe(observer: Any, scheduler: Any = None) -> Any:
            self.log.append((self.now, f"subscribe {name}"))
            subscription = inner.subscribe(observer, scheduler=scheduler)

            def dispose() -> None:
                if tracked.spans[-1][1] is None:
                    self.log.append((self.now, f"dispose {name}"))
                subscription.dispose()

            return Disposable(dispose)

        return Observable(subscribe)

    def open_target(self, target: HedgeTarget) -> Observable[Any]:
        assert target.model is not None
        tracked = Tracked(self.scheduler, self.scripts[target.model])
        self.opened[target.model] = tracked
        return self._logged(target.model, tracked)

    async def run(self, **kwargs: Any) -> Any:
        raced = self.primary.observable.pipe(self.operator)

        def record(item: object) -> object:
            self.log.append((self.now, f"item {type(item).__name__}"))
            return item

        from reactivex import operators as ops

        run = await drive(self.scheduler, raced.pipe(ops.map(record)), **kwargs)
        return run


async def test_the_hedge_wins_and_the_primary_is_closed_before_its_first_event_goes_out() -> None:
    rig = Rig(slow(10.0, "late"), {"backup": slow(0.5, "fast", start=0.2)})
    run = await rig.run()
    assert run.completed and run.end_time == pytest.approx(2.52)
    texts = [e.text for e in run.events if isinstance(e, Delta)]
    assert texts == ["fast"]
    # the primary goes at 2.5 (the hedge's first content), before any item is forwarded
    assert rig.log[:4] == [
        (0.0, "subscribe primary"),
        (2.0, "subscribe backup"),
        (2.5, "dispose primary"),
        (2.5, "item MessageStart"),
    ]
    assert rig.primary.spans == [[0.0, 2.5]]
    assert rig.hedges == [
        {"index": 1, "model": "backup", "target": BACKUP, "reason": "delay", "after": 2.0}
    ]
    assert rig.watch[:3] == [
        ("started", 0, "primary", 0.0),
        ("started", 1, "backup", 2.0),
        ("ended", 0, "hedge_lost", Usage(input_tokens=11, output_tokens=0), 2.5),
    ]
    assert rig.watch[3] == ("won", 1, 2.5)
    assert leftovers(rig.scheduler) == []


async def test_a_fast_primary_wins_and_no_hedge_is_sent() -> None:
    rig = Rig(slow(1.0, "quick"), {"backup": slow(0.1)})
    run = await rig.run()
    assert run.completed and [e.text for e in run.events if isinstance(e, Delta)] == ["quick"]
    assert rig.opened == {} and rig.hedges == []
    # the held preamble goes out at the instant of the first content, in order
    assert [t for t, _ in run.items[:3]] == [1.0, 1.0, 1.0]
    assert leftovers(rig.scheduler) == []


async def test_a_tie_goes_to_the_racer_that_started_first() -> None:
    rig = Rig(slow(3.0, "primary"), {"backup": slow(1.0, "backup", start=0.5)})
    run = await rig.run()
    assert [e.text for e in run.events if isinstance(e, Delta)] == ["primary"]
    assert rig.opened["backup"].spans == [[2.0, 3.0]]


@pytest.mark.parametrize(
    "error",
    [
        OverloadedError("HTTP 529", status_code=529),
        ServerError("HTTP 500", status_code=500),
        ReadError("connection dropped"),
        RateLimitError("HTTP 429", status_code=429, retry_after=60.0),
    ],
)
async def test_the_primary_failing_before_the_delay_sends_the_hedge_at_once(
    error: Exception,
) -> None:
    primary = [on_next(0.01, MessageStart(id="p")), on_error(0.4, error)]
    rig = Rig(primary, {"backup": slow(0.3, "backup")})
    run = await rig.run()
    assert run.completed and [e.text for e in run.events if isinstance(e, Delta)] == ["backup"]
    assert rig.opened["backup"].spans[0][0] == 0.4
    assert rig.hedges[0]["reason"] == "error" and rig.hedges[0]["after"] == 0.4
    assert ("ended", 0, type(error).__name__, None, 0.4) in rig.watch


async def test_a_rate_limited_primary_is_not_hedged_on_its_own_quota() -> None:
    shared = HedgeTarget("primary-mini", same_quota=True)
    error = RateLimitError("HTTP 429", status_code=429, retry_after=60.0)
    rig = Rig(
        [on_error(0.4, error)],
        {"primary-mini": slow(0.1)},
        policy=HedgePolicy((shared,), delay=2.0),
    )
    run = await rig.run()
    assert run.error is error and run.end_time == 0.4
    assert rig.opened == {}
    assert rig.skips == [{"target": shared, "model": "primary-mini", "reason": "rate_limited"}]
    assert rig.watch[-1] == ("adopted", 0, 0.4)  # its end goes downstream with the error


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationError("HTTP 401", status_code=401),
        BadRequestError("HTTP 400", status_code=400),
    ],
)
@pytest.mark.parametrize("side", ["primary", "backup"])
async def test_a_fatal_error_on_either_side_ends_the_race(error: Exception, side: str) -> None:
    failing = [on_next(0.01, MessageStart()), on_error(0.5, error)]
    if side == "primary":
        primary, backup = [on_next(0.01, MessageStart()), on_error(2.5, error)], slow(5.0)
    else:
        primary, backup = slow(20.0), failing
    rig = Rig(primary, {"backup": backup})
    run = await rig.run()
    assert run.error is error and run.end_time == 2.5
    assert run.items == []
    other = rig.opened["backup"] if side == "primary" else rig.primary
    assert other.spans[0][1] == 2.5
    assert leftovers(rig.scheduler) == []


async def test_both_silent_until_disposed_then_both_closed() -> None:
    silent = [on_next(0.01, MessageStart())]
    rig = Rig(silent, {"backup": list(silent)})
    run = await rig.run(dispose_at=300.0)
    assert run.items == [] and not run.finished
    assert rig.primary.spans == [[0.0, 300.0]]
    assert rig.opened["backup"].spans == [[2.0, 300.0]]
    assert rig.watch[-2:] == [("adopted", 0, 300.0), ("ended", 1, "disposed", None, 300.0)]
    assert leftovers(rig.scheduler) == []


async def test_a_winner_that_stalls_after_its_first_token_keeps_the_stream() -> None:
    stall = [on_next(0.1, MessageStart()), on_next(0.3, PartStart(0)), on_next(0.3, Delta(0, "a"))]
    rig = Rig(slow(30.0), {"backup": stall})
    run = await rig.run(dispose_at=50.0)
    assert [e.text for e in run.events if isinstance(e, Delta)] == ["a"]
    assert rig.primary.spans == [[0.0, 2.3]]  # the loser went at the win, not at the stall
    assert rig.opened["backup"].spans == [[2.0, 50.0]]


async def test_an_empty_reply_wins_at_its_end() -> None:
    empty = [
        on_next(0.1, MessageStart()),
        on_next(0.2, MessageDelta("end_turn", Usage(input_tokens=3, output_tokens=0))),
        on_next(0.2, MessageStop()),
        on_completed(0.3),
    ]
    rig = Rig(slow(10.0), {"backup": empty})
    run = await rig.run()
    assert run.completed and run.end_time == 2.3  # its completion, after the win at 2.2
    assert [type(e).__name__ for e in run.events] == ["MessageStart", "MessageDelta", "MessageStop"]
    assert rig.primary.spans == [[0.0, 2.2]]


async def test_a_tool_call_start_is_content() -> None:
    tool = [
        on_next(0.1, MessageStart()),
        on_next(0.4, PartStart(0, "tool_call", id="t1", name="f")),
        on_next(0.5, Delta(0, "{}", "tool_json")),
        on_next(0.5, PartStop(0)),
        on_next(0.5, MessageDelta("tool_use", None)),
        on_next(0.5, MessageStop()),
        on_completed(0.6),
    ]
    rig = Rig(slow(10.0), {"backup": tool})
    run = await rig.run()
    assert run.completed and rig.primary.spans == [[0.0, 2.4]]


async def test_a_truncated_racer_is_a_failure_not_a_win() -> None:
    rig = Rig(slow(3.0, "primary"), {"backup": [on_next(0.1, MessageStart()), on_completed(0.2)]})
    run = await rig.run()
    assert [e.text for e in run.events if isinstance(e, Delta)] == ["primary"]
    assert ("ended", 1, TruncatedStreamError.__name__, None, 2.2) in rig.watch


async def test_a_rate_limited_hedge_hands_back_to_the_primary() -> None:
    limited = [on_error(0.1, RateLimitError("HTTP 429", status_code=429, retry_after=30.0))]
    rig = Rig(slow(4.0, "primary"), {"backup": limited})
    run = await rig.run()
    assert run.completed and [e.text for e in run.events if isinstance(e, Delta)] == ["primary"]
    assert ("ended", 1, "RateLimitError", None, 2.1) in rig.watch


async def test_the_budget_exhausted_skips_the_hedge_with_its_reason() -> None:
    policy = HedgePolicy((BACKUP,), delay=2.0, budget_ratio=0.0, budget_min=0)
    rig = Rig(slow(5.0, "primary"), {"backup": slow(0.1)}, policy=policy)
    run = await rig.run()
    assert run.completed and rig.opened == {}
    assert rig.skips == [{"target": BACKUP, "model": "backup", "reason": "budget"}]


async def test_batches_are_held_and_forwarded_whole() -> None:
    primary = [
        on_next(0.01, [MessageStart()]),
        on_next(9.0, [PartStart(0), Delta(0, "slow")]),
        on_completed(9.1),
    ]
    backup = [
        on_next(0.1, [MessageStart(), PartStart(0)]),
        on_next(
            0.2, [Delta(0, "fast"), PartStop(0), MessageDelta("end_turn", None), MessageStop()]
        ),
        on_completed(0.3),
    ]
    rig = Rig(primary, {"backup": backup})
    run = await rig.run()
    assert run.values == [
        [MessageStart(), PartStart(0)],
        [Delta(0, "fast"), PartStop(0), MessageDelta("end_turn", None), MessageStop()],
    ]
    assert [t for t, _ in run.items] == [2.2, 2.2]


async def test_a_step_on_the_scheduler_that_raises_ends_the_race_with_that_error() -> None:
    """``blocked`` is the caller's: what it raises when the hedge is due is the race's error,
    with every racer let go, where it escaped into the scheduler (an asyncio loop logs it and
    the race waits on) and the primary ran on."""

    def blocked(target: HedgeTarget) -> bool:
        raise RuntimeError("blocked() failed")

    rig = Rig(slow(10.0, "late"), {"backup": slow(0.5)}, blocked=blocked)
    run = await rig.run()
    assert isinstance(run.error, RuntimeError) and run.end_time == 2.0
    assert rig.primary.spans == [[0.0, 2.0]] and rig.opened == {}
    assert ("adopted", 0, 2.0) in rig.watch  # its end is the downstream's error
    assert leftovers(rig.scheduler) == []


async def test_a_race_let_go_undecided_keeps_each_racers_wait_as_a_lower_bound() -> None:
    """The turn's deadline disposes a race in which nobody answered: the estimate learns that
    each racer took longer than it waited (it learnt nothing before)."""
    rig = Rig(slow(60.0, "late"), {"backup": slow(60.0)})
    run = await rig.run(dispose_at=9.0)
    assert run.items == [] and rig.primary.spans == [[0.0, 9.0]]
    estimator = rig.policy.estimator
    assert (estimator.count("primary"), estimator.quantile("primary", 0.5)) == (1, 9.0)
    assert (estimator.count("backup"), estimator.quantile("backup", 0.5)) == (1, 7.0)
    assert leftovers(rig.scheduler) == []


class _BrokenWatcher:
    """A RaceWatcher whose ``racer_ended`` raises."""

    def racer_started(self, index: int, model: str) -> contextvars.Context | None:
        return None

    def racer_ended(
        self,
        index: int,
        error: BaseException | None,
        usage: Usage | None,
        *,
        outcome: str | None = None,
        disposed: bool = False,
    ) -> None:
        raise ValueError("watcher bug")

    def racer_adopted(self, index: int, *, won: bool = False) -> None:
        return None


@pytest.mark.parametrize(
    ("primary", "ends_at"),
    [
        (slow(10.0), 3.0),  # the primary is cut when the backup wins at 3.0
        ([on_error(2.5, ServerError("x"))], 2.5),  # the primary fails while the backup runs
    ],
    ids=["loser_cut", "racer_failed"],
)
async def test_a_watcher_that_raises_ends_the_race_and_lets_every_racer_go(
    primary: Script, ends_at: float
) -> None:
    scheduler = TestScheduler()
    first = Tracked(scheduler, primary)
    backup = Tracked(scheduler, slow(1.0, "backup", start=0.5))  # content 1 s after it starts
    race = hedge(
        HedgePolicy((BACKUP,), delay=2.0),
        lambda _: backup.observable,
        model="primary",
        watcher=_BrokenWatcher(),
        scheduler=scheduler,
    )
    run = await drive(scheduler, first.observable.pipe(race))
    assert isinstance(run.error, ValueError) and str(run.error) == "watcher bug"
    assert run.end_time == ends_at
    assert first.spans == [[0.0, ends_at]]
    assert backup.spans == [[2.0, ends_at]]  # closed with the race, not left streaming
    assert leftovers(scheduler) == []


async def test_every_racer_failed_the_race_fails_with_the_primarys_error() -> None:
    """Downstream retries the source (the primary): its error is the one it must judge (a
    429's Retry-After is the primary's quota's); each racer was reported as it failed, and
    none is adopted after its end was told."""
    limited = RateLimitError("HTTP 429", status_code=429, retry_after=30.0)
    primary = [on_next(0.01, MessageStart(id="p")), on_error(0.4, limited)]
    backup = [on_next(0.01, MessageStart(id="b")), on_error(0.1, ServerError("HTTP 500"))]
    rig = Rig(primary, {"backup": backup})
    run = await rig.run()
    assert run.error is limited
    assert rig.watch == [
        ("started", 0, "primary", 0.0),
        ("ended", 0, "RateLimitError", None, 0.4),
        ("started", 1, "backup", 0.4),
        ("ended", 1, "ServerError", None, pytest.approx(0.5)),
    ]
