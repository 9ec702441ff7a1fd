"""Ray Data: ``TurnUDF`` in an actor pool, the shared budget actor, and ``batch run --ray``.

One local Ray cluster (2 CPUs) for the module; the provider is the fake, served from a thread
of this process so its request arrival times can be read.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rxturn.ray import COLUMNS, TurnUDF, budget_actor
from rxturn.testing import FakeProvider

# Ray's own deprecation notices (about its defaults, not rxturn's calls) are not failures here
pytestmark = [pytest.mark.filterwarnings("ignore:::ray"), pytest.mark.slow]  # a Ray cluster

SCENARIO = {
    "models": {
        "m": [{"text": "an answer"}],
        "bad": [{"status": 400, "error_message": "refused"}],
        # the first request is told to come back in 3 s; every later one is answered after
        # 0.8 s, so an actor's next request goes out well after any actor heard of the pause
        "paced": [
            {"status": 429, "retry_after": 3},
            {"text": "an answer", "first_content_delay_ms": 800},
        ],
        # the same with a pause long enough to be said on stderr where no progress shows it
        "held": [
            {"status": 429, "retry_after": 13},
            {"text": "an answer", "first_content_delay_ms": 1000},
        ],
    }
}


class ThreadedFake:
    """A FakeProvider on its own event loop in a thread (Ray's calls block this one)."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.fake = FakeProvider(scenario)
        asyncio.run_coroutine_threadsafe(self.fake.start(), self.loop).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    served = ThreadedFake(SCENARIO)
    try:
        yield served.fake
    finally:
        served.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("batch_format", ["default", "pandas"])
def test_every_row_comes_back_as_a_row_with_fixed_types(
    ray: Any, fake: FakeProvider, batch_format: str
) -> None:
    """Whatever the batch format: Ray's pandas batches hold ``pd.NA`` for the nulls of the
    ``model`` column, and its numpy batches make ``max_tokens`` float where a row of the
    block has no options; neither is a row's error."""
    items: list[dict[str, Any]] = [
        {
            "id": f"r{i}",
            "prompt": f"question {i}",
            "model": None,
            "options": {"max_tokens": 50} if i % 2 else None,
        }
        for i in range(40)
    ]
    items[5]["model"] = "bad"  # the provider refuses it
    items[9]["prompt"] = "   "  # not a row at all
    ds = ray.data.from_items(items).map_batches(
        TurnUDF,
        batch_format=batch_format,
        fn_constructor_kwargs={
            "provider": "openai",
            "model": "m",
            "base_url": fake.openai_base_url,
            "concurrency": 8,
        },
        compute=ray.data.ActorPoolStrategy(size=2),
        batch_size=10,
    )
    rows = ds.take_all()
    assert len(rows) == 40
    assert {row["id"] for row in rows} == {item["id"] for item in items}
    for row in rows:
        assert tuple(row) == COLUMNS
        assert all(isinstance(row[n], str) for n in COLUMNS if n not in _INTS)
        assert all(isinstance(row[n], int) for n in _INTS)
    by_id = {row["id"]: row for row in rows}
    assert by_id["r0"]["status"] == "ok" and by_id["r0"]["text"] == "an answer"
    assert by_id["r0"]["output_tokens"] > 0 and by_id["r0"]["stop_reason"] == "end_turn"
    assert by_id["r5"]["status"] == "error" and by_id["r5"]["error_type"] == "BadRequestError"
    assert by_id["r9"]["status"] == "error" and by_id["r9"]["error_type"] == "BatchInputError"
    assert sum(row["status"] == "ok" for row in rows) == 38, [
        (r["id"], r["error_type"], r["error_message"]) for r in rows if r["status"] != "ok"
    ][:4]
    assert len(fake.requests) == 39  # the malformed row was never sent


_INTS = ("input_tokens", "output_tokens", "attempts")


@pytest.mark.timeout(300)
def test_the_named_budget_actor_holds_the_rate_over_every_actor(
    ray: Any, fake: FakeProvider
) -> None:
    # created by the driver with a one-second window, so the test stays short
    # (the driver owns it: the actor lives as long as this handle)
    budget = budget_actor("rxturn-test-budget", rpm=8, window=1.0)
    items = [{"id": f"r{i}", "prompt": "q"} for i in range(30)]
    ds = ray.data.from_items(items).map_batches(
        TurnUDF,
        fn_constructor_kwargs={
            "provider": "anthropic",
            "model": "m",
            "base_url": fake.base_url,
            "rpm": 8,
            "budget_name": "rxturn-test-budget",
        },
        compute=ray.data.ActorPoolStrategy(size=2),
        batch_size=5,
    )
    assert all(row["status"] == "ok" for row in ds.take_all())
    arrivals = sorted(r.arrived for r in fake.received)
    most = max(bisect.bisect_left(arrivals, t + 0.95) - i for i, t in enumerate(arrivals))
    assert most <= 8
    assert arrivals[-1] - arrivals[0] >= 2.5  # 30 requests at 8 per second span 4 windows
    ray.kill(budget)


def _run_on_ray(
    ray: Any, fake: FakeProvider, tmp_path: Path, rows: int, model: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``batch run --ray`` of ``rows`` prompts on the test cluster, to its end: every row has
    its one ok line (the finished command is returned for its stderr)."""
    from batch._support import assert_complete, prompts, run_batch, write_rows

    inp = write_rows(tmp_path / "in.jsonl", prompts(rows))
    out = tmp_path / "out.jsonl"
    address = ray.get_runtime_context().gcs_address
    done = run_batch(inp, out, fake.base_url, "--ray", address, *extra, model=model, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert_complete(out, [f"r{i}" for i in range(rows)])
    return done


@pytest.mark.timeout(300)
def test_batch_run_on_ray_actors_writes_one_line_per_row_and_pauses_them_all(
    ray: Any, fake: FakeProvider, tmp_path: Path
) -> None:
    """Without --rpm/--tpm too, the Retry-After one actor meets holds every actor's requests,
    and the run's wait shows in the progress line's waiting_s."""
    done = _run_on_ray(ray, fake, tmp_path, 12, "paced", "--concurrency", "2", "--progress", "json")
    assert json.loads((tmp_path / "out.jsonl.manifest.json").read_text())["runs"] == 1
    arrivals = sorted(record.arrived for record in fake.records)
    told = arrivals[0]  # the request answered 429, Retry-After 3 s
    # While it holds, the only requests that arrive are the three others of the four in
    # flight (two per actor), sent before their actor could hear of it; each answer takes
    # 0.8 s, so an actor that went on would send two to four more. Counted, not timed: how
    # soon an actor hears of the pause (~0.1 s) depends on the machine's load.
    during = [round(t - told, 2) for t in arrivals[1:] if t < told + 2.9]
    assert len(during) <= 3, during
    assert len(arrivals) == 13  # every row once, and the one told to wait once more
    reports = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert reports and reports[-1]["waiting_s"] >= 0.5, reports[-1:]
    # stderr holds the progress lines and rxturn's own, nothing of Ray's logging
    assert [line for line in done.stderr.splitlines() if not line.startswith(("{", "rxturn"))] == []


def test_a_long_pause_on_ray_actors_is_said_once_on_stderr_without_progress(
    ray: Any, fake: FakeProvider, tmp_path: Path
) -> None:
    """With no progress shown (a pipe, --progress none), a Retry-After pause the actors wait
    out says so in one stderr line, as a local run's does: the driver hears of it from the
    budget actor."""
    done = _run_on_ray(ray, fake, tmp_path, 4, "held", "--concurrency", "1", "--progress", "none")
    said = [line for line in done.stderr.splitlines() if "Retry-After" in line]
    assert len(said) == 1, done.stderr
    seconds = int(said[0].split("holds every new request for ")[1].split(" s")[0])
    assert 0 < seconds <= 13  # what was left of the 13 s when the driver looked
    arrivals = sorted(record.arrived for record in fake.records)
    # and the actors held their requests meanwhile: the other actor's first one may have gone
    # before it heard of the pause; its next ones (an answer takes 1 s) wait for the end
    during = [round(t - arrivals[0], 2) for t in arrivals[1:] if t < arrivals[0] + 12.5]
    assert len(during) <= 1, during
    assert len(arrivals) == 5  # every row once, and the one told to wait once more
