"""``rxturn chat --hedge MODEL [--hedge-delay S]``: a real process against the fake server; only
the winner's text reaches stdout, the race is told on stderr, ``--json`` reports both racers."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from ._support import fake_server, run

# subprocesses (the command and the fake server); the hedge itself is tested in-process in
# tests/engine (test_hedge_*.py)
pytestmark = pytest.mark.slow

SCENARIO = {
    "models": {
        "slow": [{"text": "the slow one", "first_content_delay_ms": 60_000}],
        "quick": [{"text": "the quick one", "usage": {"input_tokens": 6, "output_tokens": 3}}],
    }
}


@pytest.fixture(scope="module")
def fake_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("hedge")) as url:
        yield url


def chat(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run(*("chat", "--provider", "anthropic", "--base-url", url, "--model", "slow"), *args)


def test_the_hedge_answers_and_only_its_text_is_printed(fake_url: str) -> None:
    out = chat(fake_url, "--hedge", "quick", "--hedge-delay", "0.2", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "the quick one\n"
    assert "also asking quick" in out.stderr
    assert "quick answered first" in out.stderr


def test_json_reports_the_winner_and_the_loser(fake_url: str) -> None:
    out = chat(fake_url, "--hedge", "quick", "--hedge-delay", "0.2", "--json", "hi")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["model"] == "quick"
    attempts = record["turns"][-1]["attempt_log"]
    assert [(a["model"], a["outcome"]) for a in attempts] == [
        ("slow", "hedge_lost"),
        ("quick", "served"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--hedge", ""), "--hedge must not be empty"),
        (("--hedge-delay", "1"), "--hedge-delay needs --hedge"),
        (
            ("--hedge", "quick", "--hedge-delay", "nan"),
            "--hedge-delay: expected a number >= 0, got 'nan'",
        ),
        (
            ("--hedge", "quick", "--hedge-delay", "-1"),
            "--hedge-delay: expected a number >= 0, got '-1'",
        ),
        (("--hedge", "quick", "--no-stream"), "cannot act with --no-stream"),
    ],
)
def test_bad_hedge_arguments_are_one_line_and_exit_2(
    fake_url: str, args: tuple[str, ...], message: str
) -> None:
    out = chat(fake_url, *args, "hi")
    assert out.returncode == 2
    assert message in out.stderr and out.stderr.count("\n") == 1
