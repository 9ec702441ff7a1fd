"""``rxturn chat`` output: piped it never shows a failed attempt; on a terminal it retracts.

Every test drives the real console script against ``rxturn fake-server`` on 127.0.0.1. The
failed attempts script letters (``q``, ``z``) that the served replies do not contain, so
"never a character of a failed attempt" is checked literally.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import SGR, clean_env, fake_server, run, run_tty, screen

pytestmark = pytest.mark.slow  # each test runs the rxturn command as a subprocess

FAILED_Q = "qqqq qqqq qqqq qqqq qqqq qqqq"
FAILED_Z = "zzzz zzzz zzzz zzzz"
CLEAN = "the clean reply"
RESCUED = "rescued whole reply"

_DROP = [
    {"text": FAILED_Q, "chunk_chars": 5, "delay_ms": 30, "drop_after_events": 6},
    {"text": CLEAN, "chunk_chars": 4, "delay_ms": 5},
]
_TRUNCATED = [{"text": FAILED_Z, "chunk_chars": 3, "delay_ms": 5, "drop_after_events": 5}] * 4 + [
    {"text": RESCUED}
]
_WAIT = [{"status": 429, "retry_after": 1.5}, {"text": "after the wait"}]

# Each model is used by one test only: a list's cursor is the server's state.
SCENARIO = {
    "models": {
        "drop-pipe": _DROP,
        "drop-tty": _DROP,
        "drop-merged": _DROP,
        "drop-rows": [
            {
                "text": "qq\nqqqq qqqq qqqq qqqq qqqq qqqq qqqq\n\tqq 全角全角全角全角",
                "chunk_chars": 4,
                "delay_ms": 10,
                "drop_after_events": 16,
            },
            {"text": CLEAN},
        ],
        "trunc-pipe": _TRUNCATED,
        "trunc-tty": _TRUNCATED,
        "wait-pipe": _WAIT,
        "wait-tty": _WAIT,
        "primary": [{"status": 500}],
        "backup": [{"text": "backup served"}],
        "*": [{"text": "Hello from the fake."}],
    }
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("chat-output")) as base:
        yield base


def chat_args(url: str, model: str, *extra: str) -> list[str]:
    return ["chat", "--provider", "anthropic", "--base-url", url, "--model", model, *extra]


# -- piped: only served text ------------------------------------------------------------------


def test_piped_one_shot_is_exactly_the_reply_and_a_newline(url: str) -> None:
    out = run(*chat_args(url, "drop-pipe", "hi"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == CLEAN + "\n"
    assert "q" not in out.stdout  # not a character of the dropped attempt
    retry = [line for line in out.stderr.splitlines() if line.startswith("[attempt 2: ")]
    assert len(retry) == 1 and "connection closed" in retry[0]


def test_piped_rescue_prints_only_the_rescued_reply(url: str) -> None:
    out = run(*chat_args(url, "trunc-pipe", "hi"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == RESCUED + "\n"
    assert "z" not in out.stdout
    lines = out.stderr.splitlines()
    assert lines[-1] == "[rescued by the non-streaming request]"
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "[attempt 2",
        "[attempt 3",
        "[attempt 4",
    ]


def test_piped_without_streaming_is_exactly_the_reply(url: str) -> None:
    out = run(*chat_args(url, "plain", "--no-stream", "hi"))
    assert out.returncode == 0, out.stderr
    assert (out.stdout, out.stderr) == ("Hello from the fake.\n", "")


def test_piped_notices_are_one_line_each_in_the_order_things_happened(url: str) -> None:
    out = run(
        *chat_args(url, "primary", "--fallback", "backup", "--no-failover"),
        stdin="one\ntwo\nthree\nfour\n",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "backup served\n"  # three failed turns left nothing on stdout
    lines = out.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("rxturn chat: error: ")]
    assert len(errors) == 3
    tripped = lines.index("[breaker tripped: primary → backup]")
    switched = lines.index("[serving model: primary → backup]")
    assert errors[-1] < tripped < switched  # the trip follows the failure that caused it
    assert all(line.startswith(("[", "rxturn chat: error: ")) for line in lines)
    assert "\033[" not in out.stderr  # no colour on a pipe


def test_piped_long_wait_is_one_line_saying_what_and_how_long(url: str) -> None:
    out = run(*chat_args(url, "wait-pipe", "hi"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "after the wait\n"
    (line,) = out.stderr.splitlines()
    assert line.startswith("[attempt 2 in 1.5 s (rate limit): HTTP 429")


# -- on a terminal: live text, retracted -------------------------------------------------------


def test_on_a_terminal_the_failed_attempt_is_shown_live_then_erased(url: str) -> None:
    result = run_tty(*chat_args(url, "drop-tty", "hi"))
    assert result.returncode == 0, result.out + result.err
    assert "qqqq" in result.out  # it was live ...
    assert [line for line in screen(result.out) if line] == [CLEAN]  # ... and is gone
    assert "[attempt 2: " in result.err


def test_on_a_shared_terminal_the_user_sees_the_notice_then_the_clean_reply(url: str) -> None:
    result = run_tty(*chat_args(url, "drop-merged", "hi"), stderr="merged")
    assert result.returncode == 0, result.out
    shown = [SGR.sub("", line) for line in screen(result.out) if line]
    notice = "".join(shown[:-1])  # one notice line, wrapped by the terminal if long
    assert notice.startswith("[attempt 2: ") and notice.endswith("]")
    assert shown[-1] == CLEAN
    assert not any("qq" in line for line in shown)


def test_a_failed_attempt_over_several_rows_is_erased_whole(url: str) -> None:
    # newlines, a tab, wrapping at 20 columns and double-width characters: every row goes
    result = run_tty(*chat_args(url, "drop-rows", "hi"), cols=20)
    assert result.returncode == 0, result.out + result.err
    assert "全角" in result.out
    assert [line for line in screen(result.out, cols=20) if line] == [CLEAN]


def test_on_a_terminal_the_rescue_replaces_the_truncated_text(url: str) -> None:
    result = run_tty(*chat_args(url, "trunc-tty", "hi"))
    assert result.returncode == 0, result.out + result.err
    assert "zzz" in result.out
    assert [line for line in screen(result.out) if line] == [RESCUED]
    assert "rescued by the non-streaming request" in result.err


def test_on_a_terminal_a_long_wait_counts_down_in_place(url: str) -> None:
    result = run_tty(*chat_args(url, "wait-tty", "hi"))
    assert result.returncode == 0, result.out + result.err
    assert "in 2 s (rate limit)" in result.err  # the countdown ...
    assert "\r\x1b[K" in result.err  # ... rewrites its line
    shown = [SGR.sub("", line) for line in screen(result.err) if line]
    assert len(shown) == 1 and shown[0].startswith("[attempt 2 in 1.5 s (rate limit): HTTP 429")
    assert [line for line in screen(result.out) if line] == ["after the wait"]


# -- colour ---------------------------------------------------------------------------------


def test_notices_are_coloured_on_a_terminal_unless_no_color(url: str, tmp_path: Path) -> None:
    cases = {"unset": None, "set": "1", "empty": ""}
    seen: dict[str, bool] = {}
    for name, value in cases.items():
        with fake_server({"models": {"*": _DROP}}, tmp_path) as own:
            env = clean_env(TERM="xterm-256color")
            if value is not None:
                env["NO_COLOR"] = value
            result = run_tty(*chat_args(own, "m", "hi"), env=env)
        assert result.returncode == 0, result.err
        assert "[attempt 2: " in result.err
        seen[name] = bool(re.search(SGR, result.err))
    # NO_COLOR set to any value turns colour off, an empty one included
    assert seen == {"unset": True, "set": False, "empty": False}
