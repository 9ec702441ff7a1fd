"""``cancellable``: a cancel token ends the pipeline with ``Cancelled`` (docs/behaviour.md §2.8)."""

from __future__ import annotations

from reactivex.testing import TestScheduler

from rxturn.errors import Cancelled
from rxturn.operators import TurnProgress, cancellable
from rxturn.operators._scheduling import clock
from rxturn.resilience.cancel import CancelToken
from rxturn.testing.virtual import Tracked, drive, reply, timeline


async def test_an_already_cancelled_token_never_subscribes_upstream(clean: TestScheduler) -> None:
    token = CancelToken()
    token.cancel("user stop")
    source = Tracked(clean, timeline(reply()))
    run = await drive(clean, source.observable.pipe(cancellable(token)))
    assert isinstance(run.error, Cancelled)
    assert str(run.error) == "user stop"
    assert run.end_time == 0.0
    assert source.spans == []


async def test_a_later_cancel_disposes_upstream_and_fails(clean: TestScheduler) -> None:
    token = CancelToken()
    events = reply("a b c d e")
    source = Tracked(clean, timeline(events, step=1.0))
    run = await drive(
        clean, source.observable.pipe(cancellable(token)), cancel=token, cancel_at=2.5
    )
    assert run.values == events[:3]
    assert isinstance(run.error, Cancelled)
    assert run.end_time == 2.5
    assert source.spans == [[0.0, 2.5]]


async def test_completion_unregisters_from_the_token(clean: TestScheduler) -> None:
    token = CancelToken()
    run = await drive(
        clean, clean.create_cold_observable(timeline(reply())).pipe(cancellable(token))
    )
    assert run.completed
    assert token._first is None and not token._more
    token.cancel()  # nothing left to notify


async def test_stamps_attempts_from_progress(clean: TestScheduler) -> None:
    token = CancelToken()
    progress = TurnProgress(clock(clean))
    progress.begin_attempt()
    progress.begin_attempt()
    run = await drive(
        clean,
        clean.create_cold_observable(timeline([], end=None)).pipe(
            cancellable(token, progress=progress)
        ),
        cancel=token,
        cancel_at=1.0,
    )
    assert isinstance(run.error, Cancelled)
    assert getattr(run.error, "attempts", None) == 2


def test_no_token_is_the_identity() -> None:
    source = TestScheduler().create_cold_observable(timeline([]))
    assert cancellable(None)(source) is source
