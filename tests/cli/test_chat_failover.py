"""``rxturn chat --fallback`` fails over within the turn; ``--json`` reports it (real processes,
the fake server over loopback)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from ._support import fake_server, run

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

SCENARIO = {
    "models": {
        "gone": [{"status": 404, "error_type": "not_found_error"}],
        "backup": [{"text": "backup served", "usage": {"input_tokens": 6, "output_tokens": 2}}],
    }
}


@pytest.fixture(scope="module")
def fake_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("failover")) as url:
        yield url


def chat(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run(
        *("chat", "--provider", "anthropic", "--base-url", url, "--model", "gone"),
        *("--fallback", "backup", "--json", *args, "hi"),
    )


def test_fallback_fails_over_and_json_reports_the_served_model(fake_url: str) -> None:
    out = chat(fake_url)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["model"] == "backup"
    assert record["message"]["content"] == [{"type": "text", "text": "backup served"}]
    (turn,) = record["turns"]
    assert [(a["model"], a["kind"], a["outcome"]) for a in turn["attempt_log"]] == [
        ("gone", "stream", "NotFoundError"),
        ("backup", "stream", "served"),
    ]
    assert all(a["ended"] >= a["started"] for a in turn["attempt_log"])
    assert turn["billed_usage"] == {
        "input_tokens": 6,
        "output_tokens": 2,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert (turn["input_tokens"], turn["output_tokens"]) == (6, 2)


def test_no_failover_keeps_the_breaker_alone(fake_url: str) -> None:
    out = chat(fake_url, "--no-failover")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["type"] == "NotFoundError"
