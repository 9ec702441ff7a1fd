"""A budget actor found dead: the gate asks the one made again, and never sends it a ticket
the dead one granted. Stub actor handles, no cluster (Ray's own error types only)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rxturn.ray import RayGate
from rxturn.testing import assert_no_secret


class _Ray:
    """``ray.exceptions``, imported when a test runs (not when an inner-loop run collects)."""

    module: Any = None


@pytest.fixture(autouse=True)
def _ray_exceptions() -> None:
    _Ray.module = pytest.importorskip("ray.exceptions", reason="the ray extra")


class _Method:
    def __init__(self, actor: _Actor, name: str) -> None:
        self.actor, self.name = actor, name

    def remote(self, *args: Any) -> Any:
        """An object ref: awaited or not (a release is sent and forgotten)."""
        self.actor.calls.append((self.name, *args))
        return _Ref(self)

    async def answer(self) -> Any:
        if self.actor.dead:
            raise _Ray.module.ActorDiedError()
        if self.name == "acquire":
            self.actor.granted += 1
            return self.actor.granted - 1  # each actor counts its tickets from 0
        if self.name == "pause_left":
            return 0.0
        return None


class _Ref:
    def __init__(self, method: _Method) -> None:
        self.method = method

    def __await__(self) -> Any:
        return self.method.answer().__await__()


class _Actor:
    """What a Ray actor handle of a BudgetActor looks like to the gate."""

    def __init__(self) -> None:
        self.dead = False
        self.granted = 0
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> _Method:
        return _Method(self, name)


async def test_a_dead_actor_is_made_again_and_its_tickets_never_reach_the_new_one() -> None:
    """``ray.kill`` of the budget actor made every later batch of every TurnUDF raise
    ``ActorDiedError`` (the whole block failed, for the rest of the run)."""
    first, second = _Actor(), _Actor()
    made: list[_Actor] = []

    def remake() -> _Actor:
        made.append(second)
        return second

    gate = RayGate(first, remake=remake)
    held = await asyncio.wait_for(gate.acquire(5), 5.0)  # granted by the first actor
    first.dead = True
    # two asks at once meet the dead actor: one new actor, each ask answered by it
    tickets = await asyncio.wait_for(asyncio.gather(gate.acquire(5), gate.acquire(5)), 5.0)
    assert made == [second]
    assert [call[0] for call in second.calls] == ["acquire", "acquire"]
    # the dead actor's ticket is dropped; the new one's go to the new one as its own numbers
    gate.release(held)
    gate.restamp(held)
    gate.correct(held, 9)
    gate.release(tickets[0])
    gate.restamp(tickets[1])
    gate.correct(tickets[1], 9)
    assert second.calls[2:] == [("release", 0), ("restamp", 1), ("correct", 1, 9)]
    assert not [call for call in first.calls if call[0] != "acquire"]


async def test_an_actor_that_dies_again_at_once_is_ray_s_error_for_the_ask() -> None:
    first, second = _Actor(), _Actor()
    first.dead = second.dead = True
    gate = RayGate(first, remake=lambda: second)
    with pytest.raises(_Ray.module.ActorDiedError):
        await asyncio.wait_for(gate.acquire(5), 5.0)
    # without a way to make it again (rxturn batch run --ray's driver owns it): Ray's error
    with pytest.raises(_Ray.module.ActorDiedError):
        await asyncio.wait_for(RayGate(_Dead()).acquire(5), 5.0)


class _Dead(_Actor):
    def __init__(self) -> None:
        super().__init__()
        self.dead = True


class _GoneGate:
    """A gate whose budget actor cannot be asked, even made again (Ray's error)."""

    def __init__(self) -> None:
        self.limited = True

    async def acquire(self, tokens: int) -> int:
        raise _Ray.module.ActorDiedError()

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


def test_a_budget_actor_that_cannot_be_asked_fails_each_row_not_the_batch() -> None:
    """The batch raised Ray's many-line ``ActorDiedError``: the whole block failed."""
    from rxturn.ray import COLUMNS, TurnUDF

    secret = "sk-ant-api03-gone-actor-0123456789"
    udf = TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", api_key=secret)
    try:
        udf._runner.gate = _GoneGate()
        out = udf({"id": ["a", "b"], "prompt": ["one", "two"]})
    finally:
        udf.close()
    assert list(out) == list(COLUMNS)
    assert out["status"] == ["error", "error"]
    assert out["id"] == ["a", "b"]
    assert out["error_type"] == ["ActorDiedError"] * 2
    assert all(
        "budget actor 'rxturn-budget' cannot be asked" in str(m) and "\n" not in str(m)
        for m in out["error_message"]
    ), out["error_message"]
    assert out["attempts"] == [0, 0]
    assert_no_secret(out, secret)


def test_a_budget_without_ray_installed_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """It said "call ray.init() first", which a process without Ray cannot do."""
    import sys

    from rxturn.errors import ConfigError
    from rxturn.ray import TurnUDF

    stub = tmp_path / "ray"
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "ray" or n.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ConfigError, match=r"^Ray is not installed: pip install 'rxturn\[ray\]'"):
        TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k-123456", rpm=5)
    # without a budget it needs no Ray
    TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k-123456").close()
