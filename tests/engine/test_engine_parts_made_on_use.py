"""An engine makes its tool registry, contributor list and calibration when they are first used.

Most conversations have no tools and no contributors, and calibration only records once a turn
has its reply, so none of the three is built with the engine. What a user does with them after
construction must still act exactly as if they had always been there: a tool registered on
``engine.tools``, a contributor appended to ``engine.contributors``, and the samples and scaling
of ``engine.calibration``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rxturn import Message, StreamHandler, TurnEngine
from rxturn.engine.agent.tools import ToolRegistry, tool
from rxturn.engine.context.window import Calibration

REPLY = {"models": {"*": [{"text": "hello there", "chunk_chars": 3}]}}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Reminder:
    def contribute(self, *, turn: int, history: Sequence[Message]) -> Sequence[Message]:
        return [Message.user("remember the goal")]


async def test_a_tool_registered_after_construction_is_sent(fake_client: Any) -> None:
    async with fake_client(REPLY) as (fake, client):
        engine = TurnEngine(client, handler=StreamHandler.default())
        await engine.run("first")
        engine.tools.register(add)
        await engine.run("second")
    first, second = fake.requests
    assert "tools" not in first or not first["tools"]
    assert [entry["name"] for entry in second["tools"]] == ["add"]
    assert len(engine.tools) == 1


async def test_a_contributor_appended_after_construction_is_asked(fake_client: Any) -> None:
    async with fake_client(REPLY) as (fake, client):
        engine = TurnEngine(client, handler=StreamHandler.default())
        await engine.run("first")
        engine.contributors.append(Reminder())
        await engine.run("second")
    first, second = fake.requests
    assert "remember the goal" not in json.dumps(first["messages"])
    assert "remember the goal" in json.dumps(second["messages"])


async def test_a_registry_and_contributors_assigned_whole_are_used(fake_client: Any) -> None:
    async with fake_client(REPLY) as (fake, client):
        engine = TurnEngine(client, handler=StreamHandler.default())
        engine.tools = ToolRegistry([add])
        engine.contributors = [Reminder()]
        await engine.run("q")
    (body,) = fake.requests
    assert [entry["name"] for entry in body["tools"]] == ["add"]
    assert "remember the goal" in json.dumps(body["messages"])


async def test_calibration_records_every_served_turn_without_being_given(
    fake_client: Any,
) -> None:
    async with fake_client(REPLY) as (_, client):
        engine = TurnEngine(client, handler=StreamHandler.default())
        await engine.run("one")
        await engine.run("two")
        samples = engine.calibration.samples(client.model)
    assert len(samples) == 2
    assert all(sample.estimate > 0 and sample.reported > 0 for sample in samples)
    assert engine.last_estimate is not None
    assert engine.last_estimate.total == samples[-1].estimate  # not enabled: not scaled


async def test_an_enabled_calibration_assigned_later_scales_the_estimate(
    fake_client: Any,
) -> None:
    async with fake_client(REPLY) as (_, client):
        engine = TurnEngine(client, handler=StreamHandler.default())
        calibration = Calibration(enabled=True)
        # the provider reports three times what was estimated, for this model
        calibration.record(client.model, 10, 30)
        engine.calibration = calibration
        await engine.run("one")
        estimate = engine.last_estimate
        raw = calibration.samples(client.model)[-1].estimate
    assert estimate is not None
    assert estimate.total == 3 * raw
