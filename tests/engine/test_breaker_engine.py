"""The model breaker wired into the engine (docs/behaviour.md §3, §4.2)."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    BreakerState,
    FallbackExhausted,
    FallbackManager,
    FallbackPolicy,
    RecordingObserver,
    StreamHandler,
    TurnEngine,
)
from rxturn.errors import RateLimitEscalation, ServerError
from rxturn.resilience.policies import RateLimitPolicy


async def test_trip_backup_cooldown_probes_and_back(
    fake_client: Any, scheduler: TestScheduler
) -> None:
    scenario = {
        "models": {
            "primary": [{"status": 500}] * 3 + [{"text": "primary probe"}],
            "backup": [{"text": "backup here"}],
        }
    }
    observer = RecordingObserver()
    breaker = FallbackManager(
        "primary",
        ["backup"],
        policy=FallbackPolicy(recovery_timeout=60.0),
        clock=lambda: float(scheduler.clock),
    )
    async with fake_client(scenario) as (fake, client):
        engine = TurnEngine(client, fallback=breaker, observers=[observer])
        for _ in range(3):
            with pytest.raises(ServerError):
                await engine.run("q")
        assert breaker.state is BreakerState.FALLBACK
        assert ("on_fallback", {"from_model": "primary", "to_model": "backup"}) in observer.calls

        served_by_backup = await engine.run("q")
        assert served_by_backup.text == "backup here"
        assert served_by_backup.turns[0].model == "backup"
        assert fake.requests[-1]["model"] == "backup"
        assert client.model == "primary"  # the shared client is never mutated
        switched = [kw for name, kw in observer.calls if name == "on_model_switched"]
        assert switched == [{"from_model": "primary", "to_model": "backup"}]

        scheduler.advance_by(59.0)
        assert (await engine.run("q")).turns[0].model == "backup"  # cooldown not over yet
        scheduler.advance_by(1.0)
        probe = await engine.run("q")
        assert probe.turns[0].model == "primary"
        assert breaker.state is BreakerState.RECOVERING
        await engine.run("q")
        assert breaker.state is BreakerState.PRIMARY
        switched = [kw for name, kw in observer.calls if name == "on_model_switched"]
        assert switched[-1] == {"from_model": "backup", "to_model": "primary"}
    successes = [kw["model"] for name, kw in observer.calls if name == "on_stream_success"]
    assert successes == ["backup", "backup", "primary", "primary"]


async def test_rate_limit_escalation_feeds_the_breaker_as_rate_limit(fake_client: Any) -> None:
    scenario = {
        "models": {"primary": [{"status": 429, "retry_after": 0}], "backup": [{"text": "b"}]}
    }
    breaker = FallbackManager("primary", ["backup"], policy=FallbackPolicy(trip_threshold=1))
    handler = StreamHandler(rate_limit=RateLimitPolicy(escalate_after=0))
    async with fake_client(scenario) as (_, client):
        engine = TurnEngine(client, fallback=breaker, handler=handler)
        with pytest.raises(RateLimitEscalation):
            await engine.run("q")
    assert breaker.state is BreakerState.FALLBACK


async def test_exhausted_chain_fails_before_any_turn_event(fake_client: Any) -> None:
    scenario = {"models": {"*": [{"status": 500}]}}
    observer = RecordingObserver()
    breaker = FallbackManager(
        "primary", ["backup"], policy=FallbackPolicy(trip_threshold=1, max_fail_count=1)
    )
    async with fake_client(scenario) as (_, client):
        engine = TurnEngine(client, fallback=breaker, observers=[observer])
        with pytest.raises(ServerError):
            await engine.run("q")  # trips: primary -> backup
        with pytest.raises(ServerError):
            await engine.run("q")  # the backup fails and takes its only strike
        observer.calls.clear()
        with pytest.raises(FallbackExhausted):
            await engine.run("q")
    turn_events = [n for n, _ in observer.calls if n.startswith("on_turn")]
    assert turn_events == []
    # a turn that fails appends its audit entry too: this one made no attempt, billed nothing
    refused = engine.session.runs[-1].turns
    assert [(t.error, t.attempts, t.attempt_log, t.billed_usage, t.input) for t in refused] == [
        ("FallbackExhausted", 0, (), None, "q")
    ]


async def test_backup_failure_takes_a_strike(fake_client: Any) -> None:
    scenario = {"models": {"primary": [{"status": 500}], "backup": [{"status": 500}]}}
    breaker = FallbackManager("primary", ["backup"], policy=FallbackPolicy(trip_threshold=1))
    async with fake_client(scenario) as (_, client):
        engine = TurnEngine(client, fallback=breaker)
        with pytest.raises(ServerError):
            await engine.run("q")
        with pytest.raises(ServerError):
            await engine.run("q")
    entry = breaker.fallback_entry("backup")
    assert entry is not None and entry.strikes == 1
