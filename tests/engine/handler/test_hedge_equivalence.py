"""A hedged first attempt: the driver against the public operators composed by hand.

The engine hedges a turn by giving the handler's plan a ``race``: the first attempt's request is
piped through :func:`rxturn.operators.hedge` before the attempt's own operators see it, and the
later attempts are not raced. The hand composition writes the same thing with the operators
(``open_attempt`` returns the raced request on its first call only); both runs must show the
same items at the same virtual instants, the same end, and open and let go the same requests
(the primary's and the hedge's) at the same instants.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from reactivex import Observable
from reactivex.testing import TestScheduler

from rxturn.engine.handler import StreamHandler
from rxturn.errors import ServerError
from rxturn.events import Delta, MessageStart
from rxturn.messages import RequestOptions
from rxturn.operators import hedge
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.hedge import HedgePolicy, HedgeTarget
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.sources import from_awaitable
from rxturn.testing.virtual import (
    REQUEST,
    Run,
    ScriptedClient,
    assert_clean,
    drive,
    reply,
    timeline,
)

from .composition import composed_turn

BACKUP = "backup"
TIMEOUTS = TimeoutPolicy(first_event=3.0, per_event=3.0, total=30.0)


def _late(first_content_at: float, text: str = "the primary at last") -> list[Any]:
    """A preamble at once, then nothing until ``first_content_at``, then the reply."""
    events = reply(text)
    preamble = timeline(events[:1], start=0.01)
    rest = timeline(events[1:], start=first_content_at)
    return [*preamble, *rest]


def _silent() -> list[Any]:
    return timeline([MessageStart(id="m", model="scripted")], end=None)


@dataclass
class Case:
    primary: list[list[Any]]
    backup: list[list[Any]]
    delay: float = 1.0
    cancel_at: float | None = None
    timeouts: TimeoutPolicy = field(default_factory=lambda: TIMEOUTS)


CASES: dict[str, Case] = {
    "the primary answers before the delay": Case([timeline(reply())], [timeline(reply("no"))]),
    "the hedge wins": Case([_late(5.0)], [timeline(reply("the backup first"))]),
    "the primary wins after the hedge went out": Case(
        [_late(1.2)], [timeline(reply("too late"), start=0.5)]
    ),
    "the primary fails before the delay: the hedge at once": Case(
        [timeline(reply()[:1], end=ServerError("HTTP 500"))], [timeline(reply("backup"))]
    ),
    "the winner fails mid-reply: a retry, not raced": Case(
        [_late(5.0), timeline(reply("retried"))],
        [timeline(reply("backup cut short here")[:4], end=ServerError("HTTP 502"))],
    ),
    "both silent: the first-event deadline, then a retry": Case(
        [_silent(), timeline(reply("retried"))], [_silent()]
    ),
    "cancel mid-race": Case([_late(5.0)], [_silent()], cancel_at=1.5),
}


def _race(case: Case, client: ScriptedClient, scheduler: TestScheduler) -> Any:
    policy = HedgePolicy((HedgeTarget(BACKUP),), delay=case.delay)
    return hedge(
        policy,
        lambda target: client.stream(REQUEST, RequestOptions(model=target.model)),
        model="scripted",
        client=client,
        scheduler=scheduler,
    )


def _by_operators(
    case: Case, client: ScriptedClient, scheduler: TestScheduler, token: CancelToken
) -> Observable[Any]:
    race = _race(case, client, scheduler)
    opened = 0

    def open_attempt() -> Observable[Any]:
        nonlocal opened
        opened += 1
        source = client.stream(REQUEST)
        return source.pipe(race) if opened == 1 else source

    return composed_turn(
        open_attempt,
        lambda: from_awaitable(lambda: client.create(REQUEST)),
        scheduler=scheduler,
        token=token,
        timeouts=case.timeouts,
        retry=RetryPolicy(jitter=0.3),
        rate_limit=RateLimitPolicy(),
        limiter=None,
        key=client.base_url,
    )


def _by_handler(
    case: Case, client: ScriptedClient, scheduler: TestScheduler, token: CancelToken
) -> Observable[Any]:
    handler = StreamHandler(
        timeouts=case.timeouts,
        retry=RetryPolicy(jitter=0.3),
        rate_limit=RateLimitPolicy(),
        rng=random.Random(7),
    )
    plan = handler.plan_turn(client, REQUEST, None, token, scheduler=scheduler)
    plan.race = _race(case, client, scheduler)
    return Observable(plan.subscribe_lists)


async def _record(case: Case, build: Any) -> tuple[Run, list[Any], list[str]]:
    scheduler = TestScheduler()
    client = ScriptedClient(scheduler, case.primary, models={BACKUP: case.backup})
    token = CancelToken()
    run = await drive(
        scheduler, build(case, client, scheduler, token), cancel=token, cancel_at=case.cancel_at
    )
    await assert_clean(scheduler)
    return run, client.spans, client.models_asked


def _error_facts(error: BaseException | None) -> object:
    if error is None:
        return None
    return type(error).__name__, str(error), getattr(error, "attempts", None)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_hedged_first_attempt_matches_the_operators(name: str) -> None:
    case = CASES[name]
    driven, driven_spans, driven_models = await _record(case, _by_handler)
    composed, spans, models = await _record(case, _by_operators)
    assert driven.items == composed.items
    assert (driven.completed, driven.end_time) == (composed.completed, composed.end_time)
    assert _error_facts(driven.error) == _error_facts(composed.error)
    assert driven_spans == spans
    assert driven_models == models


async def test_the_cases_race() -> None:
    # the table is only worth something if hedges go out and win, and retries are not raced
    won, _, models = await _record(CASES["the hedge wins"], _by_handler)
    assert models == ["scripted", BACKUP]
    texts: list[str] = []
    for batch in won.values:
        assert isinstance(batch, list), batch
        texts += [e.text for e in batch if isinstance(e, Delta)]
    assert "".join(texts) == "the backup first"
    _, _, models = await _record(
        CASES["the winner fails mid-reply: a retry, not raced"], _by_handler
    )
    assert models == ["scripted", BACKUP, "scripted"]
