"""``rxturn batch run`` tunes the cycle collector in each of its processes (the command's and
every worker's) once its set-up is done, and so does ``rxturn fake-server``: what exists then is
frozen, and young collections are rarer. A library user's process is left as it is."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli._support import TIMEOUT, clean_env, fake_server

from batch._support import assert_complete, prompts, run_batch, write_rows
from rxturn._heap import YOUNG
from rxturn.cost import cost_available

# each process of the command says, as it exits, how its collector was set
_REPORTER = textwrap.dedent(
    """
    import atexit, gc, json, os, sys

    def _report():
        # the price data (with the cost extra) is loaded before the freeze: frozen, not seen
        snapshot = sys.modules.get("genai_prices.data_snapshot")
        prices = None
        if snapshot is not None:
            data = snapshot.get_snapshot()
            prices = not any(obj is data for obj in gc.get_objects())
        with open(os.environ["COLLECTOR_REPORT"], "a") as file:
            threshold = gc.get_threshold()
            seen = [os.getpid(), threshold[0], gc.get_freeze_count(), prices]
            file.write(json.dumps(seen) + "\\n")

    atexit.register(_report)
    """
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenario = {"models": {"*": [{"text": "an answer"}]}}
    with fake_server(scenario, tmp_path_factory.mktemp("fake")) as url:
        yield url


def _reporting(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose processes write how their collector was set, and where to."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_REPORTER)
    report = tmp_path / "report.jsonl"
    path = os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])
    return clean_env(PYTHONPATH=path, COLLECTOR_REPORT=str(report)), report


@pytest.mark.parametrize("workers", [1, 2])
def test_every_process_of_the_command_is_tuned(server: str, tmp_path: Path, workers: int) -> None:
    env, report = _reporting(tmp_path)
    source = write_rows(tmp_path / "in.jsonl", prompts(6))
    out = tmp_path / "out.jsonl"
    done = run_batch(source, out, server, "--workers", str(workers), env=env)
    assert done.returncode == 0, done.stderr
    assert_complete(out, [f"r{i}" for i in range(6)])
    seen = [json.loads(line) for line in report.read_text().splitlines()]
    assert len({pid for pid, *_ in seen}) == len(seen) == (1 if workers == 1 else 1 + workers)
    for _, young, frozen, _ in seen:
        assert young == YOUNG != gc.get_threshold()[0]
        assert frozen > 1000  # the imports and the set-up, at least
    if cost_available():  # each process that ran rows froze the price data with its set-up
        assert [prices for *_, prices in seen if prices is not None] == [True] * workers


def test_the_fake_server_is_tuned_once_it_listens(tmp_path: Path) -> None:
    env, report = _reporting(tmp_path)
    with fake_server({"models": {"*": [{"text": "an answer"}]}}, tmp_path, env=env) as url:
        assert url.startswith("http://127.0.0.1:")
    # stopped by SIGTERM: a clean exit, whose hooks ran
    [(_, young, frozen, _)] = [json.loads(line) for line in report.read_text().splitlines()]
    assert young == YOUNG != gc.get_threshold()[0]
    assert frozen > 1000  # aiohttp, the server, the scenario


def test_the_library_leaves_the_collector_alone() -> None:
    code = (
        "import gc, rxturn.batch, rxturn.cli._batch, rxturn.batch._worker, rxturn.testing,"
        " rxturn.cli._fake_server;"
        "print(gc.get_threshold()[0], gc.get_freeze_count())"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        check=True,
    ).stdout.split()
    assert shown == [str(gc.get_threshold()[0]), "0"]
