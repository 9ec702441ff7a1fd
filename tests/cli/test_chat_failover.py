"""``rxturn chat --fallback`` fails over within the turn; ``--json`` reports it (real processes,
the fake server over loopback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

SCENARIO = {
    "models": {
        "gone": [{"status": 404, "error_type": "not_found_error"}],
        "backup": [{"text": "backup served", "usage": {"input_tokens": 6, "output_tokens": 2}}],
    }
}


@pytest.fixture(scope="module")
def fake_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("failover") / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rxturn", "fake-server", "--scenario", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        yield first.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def chat(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [
            *(sys.executable, "-m", "rxturn", "chat", "--provider", "anthropic"),
            *("--base-url", url, "--model", "gone", "--fallback", "backup", "--json"),
            *args,
            "hi",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
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
    assert turn["billed_usage"] == {"input_tokens": 6, "output_tokens": 2}
    assert (turn["input_tokens"], turn["output_tokens"]) == (6, 2)


def test_no_failover_keeps_the_breaker_alone(fake_url: str) -> None:
    out = chat(fake_url, "--no-failover")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["type"] == "NotFoundError"
