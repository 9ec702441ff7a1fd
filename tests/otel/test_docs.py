"""docs/observability.md tells the truth: its example runs as printed, and its metric attributes
and finish reasons are what the observer exports."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rxturn import AnthropicClient, StreamHandler, TurnEngine
from rxturn.errors import AuthenticationError
from rxturn.messages import StopReason
from rxturn.testing import FakeProvider

from .conftest import Telemetry

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


@pytest.mark.slow
def test_the_console_example_runs() -> None:
    example = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)[0]
    out = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    names = re.findall(r'"name": "([^"]+)"', out.stdout)
    assert names == [
        "rxturn.attempt",
        "rxturn.attempt",
        "chat claude-sonnet-4-5",
        "invoke_agent rxturn",
    ]
    assert '"error.type": "OverloadedError"' in out.stdout


def _section(title: str) -> str:
    return DOC.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _documented_metric_attributes() -> dict[str, set[str]]:
    """Instrument (or ``gen_ai.client.*``) → the attribute names its bullet lists."""
    found: dict[str, set[str]] = {}
    for bullet in re.findall(r"^- (.*?)(?=^- |^\n)", _section("Metrics"), re.M | re.S):
        head, names = bullet.split(":", 1)
        found[head.strip("` ")] = set(re.findall(r"`([a-z_.]+)`", names)) - {"RateLimitError"}
    return found


async def test_each_metric_carries_the_attributes_the_document_lists(telemetry: Telemetry) -> None:
    # was one sentence giving every metric the gen_ai.client ones: rxturn.attempts carries
    # neither server.* nor gen_ai.operation.name, rxturn.rate_limit.wait its own three
    script = {
        "models": {
            "*": [
                {"status": 429, "retry_after": 0.01},
                {"text": "ok", "usage": {"input_tokens": 3, "output_tokens": 1}},
                {"status": 401},
            ]
        }
    }
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, handler=StreamHandler.default(), observers=[telemetry.observer()]
        )
        await engine.run("served after a 429")
        with pytest.raises(AuthenticationError):
            await engine.run("refused")
    exported: dict[str, set[str]] = {}
    for metric in (
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
        "rxturn.attempts",
        "rxturn.rate_limit.wait",
    ):
        points = telemetry.points(metric)
        assert points, metric
        group = "gen_ai.client.*" if metric.startswith("gen_ai.client.") else metric
        exported.setdefault(group, set()).update(*(set(p.attributes) for p in points))
    documented = _documented_metric_attributes()
    # (the offline estimates' marker: a turn with count_offline, in test_observer.py)
    documented["gen_ai.client.*"].discard("rxturn.usage.source")
    assert documented == exported


def test_the_finish_reasons_documented_are_every_stop_reason() -> None:
    (row,) = re.findall(r"^\| `gen_ai\.response\.finish_reasons` \|(.*)$", DOC.read_text(), re.M)
    assert set(re.findall(r"`(\w+)`", row)) == {reason.value for reason in StopReason}
