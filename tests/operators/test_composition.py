"""The operators composed by hand, as the ``rxturn.operators`` docstring shows: a user's own
pipeline gets the handler's behaviour without ``StreamHandler``."""

from __future__ import annotations

from typing import Any

import reactivex
from reactivex import Observable
from reactivex.testing import TestScheduler

from rxturn.errors import ConfigError, ServerError
from rxturn.events import Fallback
from rxturn.messages import Message
from rxturn.operators import (
    TurnProgress,
    attempt_guard,
    cancellable,
    deadlines,
    rescue,
    retry_ladder,
    scrubbed,
    total_deadline,
)
from rxturn.operators._scheduling import clock
from rxturn.resilience.cancel import CancelToken
from rxturn.resilience.policies import RetryPolicy
from rxturn.sources import from_awaitable
from rxturn.testing import assert_no_secret
from rxturn.testing.virtual import REQUEST, ScriptedClient, drive, reply, timeline


def pipeline(client: ScriptedClient, token: CancelToken, scheduler: TestScheduler) -> Any:
    def per_turn(_: Any) -> Observable[Any]:
        p = TurnProgress(clock(scheduler), total=300.0)
        attempt = reactivex.defer(lambda _: client.stream(REQUEST)).pipe(
            attempt_guard(p),
            deadlines(120.0, 180.0, 10, progress=p, scheduler=scheduler),
        )
        return attempt.pipe(
            retry_ladder(RetryPolicy(max_retries=1, jitter=0.0), progress=p, scheduler=scheduler),
            total_deadline(300.0, progress=p, scheduler=scheduler),
            rescue(
                lambda: from_awaitable(lambda: client.create(REQUEST)),
                timeout=120.0,
                progress=p,
                scheduler=scheduler,
            ),
            cancellable(token, progress=p),
        )

    return reactivex.defer(per_turn)


async def test_a_hand_built_pipeline_retries_then_rescues(clean: TestScheduler) -> None:
    rescued = Message.assistant("from create()")
    client = ScriptedClient(
        clean, [timeline(reply()[:3], end=ServerError("HTTP 500"))], create=[rescued]
    )
    run = await drive(clean, pipeline(client, CancelToken(), clean))
    assert run.completed
    assert [r.attempt for r in run.resets] == [2]
    assert run.values[-1] == Fallback(rescued)
    assert len(client.stream_calls) == 2 and len(client.create_calls) == 1


async def test_each_subscription_is_a_fresh_turn(clean: TestScheduler) -> None:
    client = ScriptedClient(clean, [timeline(reply("ok"))])
    turn = pipeline(client, CancelToken(), clean)
    for _ in range(2):
        run = await drive(clean, turn)
        assert run.completed and run.resets == []
    assert len(client.stream_calls) == 2


async def test_a_scrub_that_raises_ends_the_attempt_with_a_config_error_not_a_hang(
    clean: TestScheduler,
) -> None:
    # the scrub's exception used to escape from on_error: the attempt never ended
    secret = "sk-live-Opaque-123456789"
    leaky = ServerError(f"echoed {secret}")

    def scrub(error: BaseException) -> None:
        raise RuntimeError(f"cannot clean {error}")

    source = clean.create_cold_observable(timeline(reply("a")[:1], end=leaky))
    run = await drive(clean, source.pipe(scrubbed(scrub)))
    assert isinstance(run.error, ConfigError)
    assert str(run.error) == (
        "scrubbed: scrub raised RuntimeError on an attempt's ServerError, which is withheld "
        "(it may hold the API key)"
    )
    assert run.end_time == 0.02
    assert_no_secret(run.error, secret)
