"""``rxturn chat`` prompts and commands: ``-`` reads stdin, empty prompts are refused before
anything is sent (checked with ``GET /_fake/requests``), ``/quit``, ``/exit``, ``/model``,
``/stats``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._support import fake_server, received, run

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

SCENARIO = {
    "models": {
        "bad": [{"status": 401}],
        "*": [{"text": "ok"}],
    }
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("chat-prompts")) as base:
        yield base


def chat(url: str, *extra: str, stdin: str | None = None, model: str = "m"):
    return run(
        "chat", "--provider", "anthropic", "--base-url", url, "--model", model, *extra, stdin=stdin
    )


def test_dash_reads_all_of_stdin_as_one_prompt(url: str) -> None:
    before = len(received(url))
    out = chat(url, "-", stdin="line one\nline two\n\nline four\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok\n"
    bodies = received(url)[before:]
    assert len(bodies) == 1  # one turn, not one per line
    assert bodies[0]["messages"] == [{"role": "user", "content": "line one\nline two\n\nline four"}]


@pytest.mark.parametrize(
    ("argument", "stdin"),
    [("", None), ("   ", None), ("\n\t", None), ("-", ""), ("-", " \n\n  \n")],
    ids=["empty", "spaces", "whitespace", "empty-stdin", "blank-stdin"],
)
def test_an_empty_or_blank_prompt_is_refused_and_nothing_is_sent(
    url: str, argument: str, stdin: str | None
) -> None:
    before = len(received(url))
    out = chat(url, argument, stdin=stdin)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == "rxturn chat: error: the prompt is empty; nothing was sent\n"
    assert len(received(url)) == before


def test_stdin_that_is_not_utf8_is_refused(url: str) -> None:
    import subprocess

    from ._support import RXTURN, clean_env

    before = len(received(url))
    out = subprocess.run(
        [*RXTURN, "chat", "--provider", "anthropic", "--base-url", url, "--model", "m", "-"],
        input=b"caf\xe9\n",
        capture_output=True,
        timeout=60,
        env=clean_env(),
    )
    assert out.returncode == 2
    assert out.stderr.decode().startswith("rxturn chat: error: stdin is not valid UTF-8")
    assert len(received(url)) == before


@pytest.mark.parametrize("command", ["/quit", "/exit"])
def test_quit_and_exit_end_the_interactive_chat(url: str, command: str) -> None:
    before = len(received(url))
    out = chat(url, stdin=f"first\n{command}\nnever sent\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok\n"
    bodies = received(url)[before:]
    assert [b["messages"][-1]["content"] for b in bodies] == ["first"]


def test_model_without_an_argument_shows_the_current_model(url: str) -> None:
    out = chat(url, stdin="/model\n/model other-model\n/model\n/model other-model\n")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        "model: m",
        "[serving model: m → other-model]",
        "model: other-model",
        "model: other-model (unchanged)",
    ]


def test_a_switched_model_is_the_one_asked(url: str) -> None:
    before = len(received(url))
    out = chat(url, stdin="/model other-model\nhello\n")
    assert out.returncode == 0, out.stderr
    assert [b["model"] for b in received(url)[before:]] == ["other-model"]


def test_stats_count_failed_turns_too(url: str) -> None:
    out = chat(url, model="bad", stdin="one\ntwo\n/stats\n")
    assert out.returncode == 0, out.stderr  # failed turns do not end the chat
    (stats,) = [line for line in out.stderr.splitlines() if line.startswith("turns ")]
    assert stats.startswith("turns 2 (0 served, 2 failed) · attempts 2 ·")


def test_stats_count_served_turns(url: str) -> None:
    out = chat(url, stdin="one\n/stats\n")
    (stats,) = [line for line in out.stderr.splitlines() if line.startswith("turns ")]
    assert stats.startswith("turns 1 (1 served, 0 failed) · attempts 1 ·")
    assert "messages 2" in stats  # the prompt and the reply


def test_an_unknown_command_says_so_and_sends_nothing(url: str) -> None:
    before = len(received(url))
    out = chat(url, stdin="/frobnicate\n")
    assert out.returncode == 0
    assert out.stderr.startswith("unknown command /frobnicate; commands: ")
    assert len(received(url)) == before


def test_stats_say_what_the_turns_cost(url: str) -> None:
    """Model "m" is no model genai-prices knows: its turn is unpriced, and says so."""
    out = chat(url, stdin="one\n/stats\n")
    (stats,) = [line for line in out.stderr.splitlines() if line.startswith("turns ")]
    assert "cost $0 (1 attempt unpriced) (last turn $0 (1 attempt unpriced))" in stats


def test_json_and_stats_carry_a_priced_turns_cost(tmp_path_factory: pytest.TempPathFactory) -> None:
    import json
    from decimal import Decimal

    import genai_prices

    scenario = {
        "models": {"*": [{"text": "ok", "usage": {"input_tokens": 2000, "output_tokens": 300}}]}
    }
    with fake_server(scenario, tmp_path_factory.mktemp("chat-cost")) as base:
        out = chat(base, "--json", "hi", model="claude-sonnet-4-5")
        stats = chat(base, stdin="one\n/stats\n", model="claude-sonnet-4-5")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=2000, output_tokens=300, cache_read_tokens=0, cache_write_tokens=0
        ),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    ).total_price
    assert Decimal(record["cost"]["total"]) == expected
    assert record["cost"]["unpriced_attempts"] == 0 and record["cost"]["currency"] == "USD"
    (turn,) = record["turns"]
    assert Decimal(turn["cost"]["total"]) == expected
    assert Decimal(turn["attempt_log"][0]["cost"]) == expected
    assert turn["billed_usage"] == {
        "input_tokens": 2000,
        "output_tokens": 300,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    line = next(x for x in stats.stderr.splitlines() if x.startswith("turns "))
    assert f"cost ${format(expected.normalize(), 'f')} " in line
