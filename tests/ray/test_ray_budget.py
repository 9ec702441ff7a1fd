"""The named budget actor grants nothing to an ask its caller gave up on.

One local Ray cluster (2 CPUs, tests/ray/conftest.py); each test has its own budget actor with one
request per hour, so a grant that should not exist blocks the next ask instead of passing
unseen.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from rxturn.ray import RayGate, budget_actor
from rxturn.ray._budget import CANCELLED

pytestmark = [
    pytest.mark.filterwarnings("ignore:::ray"),
    pytest.mark.timeout(120),
    pytest.mark.slow,
]


@pytest.fixture
def actor(ray: Any) -> Iterator[Any]:
    handle: Any = budget_actor(f"rxturn-test-{uuid.uuid4().hex[:8]}", rpm=1, window=3600.0)
    try:
        yield handle
    finally:
        ray.kill(handle)


async def test_an_ask_cancelled_while_it_waits_is_never_granted(actor: Any) -> None:
    gate = RayGate(actor)
    first = await asyncio.wait_for(gate.acquire(1), 60.0)
    assert first >= 0
    # the one request of the hour is granted (not sent): the next ask waits, and gives up
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(gate.acquire(1), 0.5)
    gate.release(first)
    # had the abandoned ask stayed in the actor's queue, the release would have granted it and
    # this ask would wait an hour
    third = await asyncio.wait_for(gate.acquire(1), 30.0)
    assert third >= 0
    assert await actor.counts.remote() == (1, 1)  # the third's grant alone


async def test_a_cancel_that_comes_after_the_grant_releases_it(actor: Any) -> None:
    ticket = await actor.acquire.remote(1, "ask-1")
    assert ticket >= 0
    assert await actor.counts.remote() == (1, 1)
    await actor.cancel.remote("ask-1")  # its caller stopped waiting as the grant went out
    assert await actor.counts.remote() == (0, 0)
    assert await actor.acquire.remote(1, "ask-2") >= 0  # the hour's one request is free again


async def test_a_cancel_that_overtakes_its_ask_leaves_it_ungranted(actor: Any) -> None:
    await actor.cancel.remote("ask-1")  # an async actor may run the cancel first
    assert await actor.acquire.remote(1, "ask-1") == CANCELLED
    assert await actor.counts.remote() == (0, 0)


async def test_a_sent_grant_stays_counted_and_a_release_of_it_changes_nothing(
    actor: Any,
) -> None:
    gate = RayGate(actor)
    ticket = await asyncio.wait_for(gate.acquire(1), 60.0)
    await actor.restamp.remote(ticket)
    await actor.release.remote(ticket)
    assert await actor.counts.remote() == (1, 0)  # sent: in the window, not held


async def test_without_a_budget_a_pause_one_gate_met_holds_another_and_nothing_is_charged(
    ray: Any,
) -> None:
    handle: Any = budget_actor(f"rxturn-test-{uuid.uuid4().hex[:8]}")  # no rpm, no tpm
    try:
        met, other = RayGate(handle, limited=False), RayGate(handle, limited=False)
        assert await asyncio.wait_for(other.acquire(1), 30.0) == -1  # no pause: at once
        loop = asyncio.get_running_loop()
        told = loop.time()
        met.pause(1.0)  # a Retry-After this gate's actor met
        await asyncio.sleep(0.1)  # the other gate's last look at the pause is stale by now

        async def held(gate: RayGate) -> float:
            assert await asyncio.wait_for(gate.acquire(1), 30.0) == -1
            return loop.time() - told

        # its own requests hold, and so do the other's: it asks the actor how long it lasts
        assert min(await asyncio.gather(held(met), held(other))) >= 0.9
        other.rate_limited(2.0)  # a row's sleep on the rate-limit ladder: the run's waits
        for _ in range(100):
            if await handle.waited.remote() >= 2.0:
                break
            await asyncio.sleep(0.05)
        assert await handle.waited.remote() >= 2.0
        assert await handle.counts.remote() == (0, 0)  # no grant was made or held
    finally:
        ray.kill(handle)
    # the actor is gone: a request is not held by a pause nobody can tell it of
    alone = RayGate(handle, limited=False)
    assert await asyncio.wait_for(alone.acquire(1), 30.0) == -1
    alone.pause(0.1)  # told to a gone actor: nothing raised here, the pause holds this gate
    alone.rate_limited(0.1)
    assert await asyncio.wait_for(alone.acquire(1), 30.0) == -1


def test_a_turnudf_given_other_limits_than_the_running_actors_is_a_config_error(
    ray: Any,
) -> None:
    """The budget actor found running keeps the limits it was made with: a TurnUDF given
    others is told so when it is made, rather than run at limits it was not given."""
    from rxturn.errors import ConfigError
    from rxturn.ray import TurnUDF

    name = f"rxturn-test-{uuid.uuid4().hex[:8]}"
    handle: Any = budget_actor(name, rpm=1, window=3600.0)
    try:
        with pytest.raises(ConfigError, match=r"is running with rpm=1, tpm=None; this TurnUDF"):
            TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", rpm=5, budget_name=name)
        same = TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", rpm=1, budget_name=name)
        same.close()
    finally:
        ray.kill(handle)


def test_a_killed_budget_actor_is_made_again_and_the_turnudfs_rows_still_run(ray: Any) -> None:
    """``ray.kill`` of the budget actor made every later batch of a TurnUDF with ``rpm`` raise
    ``ActorDiedError`` (a failed block, for the rest of the run); now the actor is made again
    with the same limits and the rows run."""
    from test_ray_data import ThreadedFake

    from rxturn.ray import TurnUDF

    served = ThreadedFake({"models": {"*": [{"text": "an answer"}]}})
    name = f"rxturn-test-{uuid.uuid4().hex[:8]}"
    handle: Any = budget_actor(name, rpm=600)
    udf = TurnUDF("anthropic", "m", base_url=served.fake.base_url, rpm=600, budget_name=name)
    try:
        assert udf({"id": ["a"], "prompt": ["one"]})["status"] == ["ok"]
        ray.kill(handle)
        out = udf({"id": ["b", "c"], "prompt": ["two", "three"]})
        assert out["status"] == ["ok", "ok"], out["error_message"]
        assert len(served.fake.requests) == 3
        again = ray.get_actor(name)
        assert ray.get(again.limits.remote(), timeout=60) == (600, None)
        assert ray.get(again.counts.remote(), timeout=60) == (2, 0)  # its own two requests
    finally:
        udf.close()
        served.close()
        with contextlib.suppress(Exception):
            ray.kill(ray.get_actor(name))
