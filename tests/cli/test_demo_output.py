"""``rxturn demo`` piped and on a terminal: served replies only on a pipe, retraction on a
terminal, notices on stderr in the order things happened, colour only where it belongs."""

from __future__ import annotations

import subprocess

import pytest

from rxturn.cli import _demo_story as story

from ._support import SGR, clean_env, run_tty, screen

pytestmark = pytest.mark.slow  # each test plays the demo in real time (the piped run is shared)

REPLIES = {
    story._T1,
    story._T2,
    story._T3,
    story._T5,
    story._T6A,
    story._T6B,
    story._T7,
    story._T8,
}


_NOT_REPLIES = ("  🔧", "  ↻", "  ⏳", "  ✗", "  ⚡", "  ⇄")  # tool lines and notices


def _reply_lines(lines: list[str]) -> list[str]:
    """The indented lines that are neither tool lines nor notices: the replies."""
    return [
        line[2:]
        for line in lines
        if line.startswith("  ") and not line.startswith(_NOT_REPLIES) and line.strip()
    ]


def test_piped_demo_writes_only_whole_served_replies(
    piped_demo: subprocess.CompletedProcess[str],
) -> None:
    replies = _reply_lines(piped_demo.stdout.splitlines())
    assert sorted(replies) == sorted(REPLIES)  # each once, whole: no dropped or truncated part


def test_piped_demo_tells_notices_in_order_on_stderr(
    piped_demo: subprocess.CompletedProcess[str],
) -> None:
    out = piped_demo
    notices = out.stderr.splitlines()
    assert all(line.startswith("  ") for line in notices)  # nothing else on stderr
    failures = [i for i, line in enumerate(notices) if "rx-primary failed: RescueFailed" in line]
    assert len(failures) == 3
    tripped = notices.index("  ⚡ breaker tripped: rx-primary → rx-backup")
    switched = notices.index("  ⇄ serving model: rx-primary → rx-backup")
    assert failures[-1] < tripped < switched  # the trip comes after the failure that caused it
    rescue = notices.index("  ↻ rescued by the non-streaming request")
    assert notices[rescue - 1] == "  ↻ attempt 4: the same error again"
    assert "non-streaming rescue request" in notices[failures[0]]  # not "fallback also failed"


def test_on_a_terminal_the_demo_retracts_and_colours() -> None:
    result = run_tty("demo", stderr="merged", cols=200)
    assert result.returncode == 0, result.out
    assert SGR.search(result.out)  # colour on a terminal
    assert "\x1b[J" in result.out  # failed attempts were erased ...
    shown = [SGR.sub("", line) for line in screen(result.out, cols=200)]
    # ... so the screen holds each reply once, whole, and no partial attempt
    assert sorted(_reply_lines(shown)) == sorted(REPLIES)
    assert "  ⚡ breaker tripped: rx-primary → rx-backup" in shown


def test_no_color_turns_colour_off_but_keeps_the_retraction() -> None:
    env = clean_env(TERM="xterm-256color", NO_COLOR="1")
    result = run_tty("demo", stderr="merged", cols=200, env=env)
    assert result.returncode == 0, result.out
    assert not SGR.search(result.out)
    assert "\x1b[J" in result.out
    assert sorted(_reply_lines(screen(result.out, cols=200))) == sorted(REPLIES)


def test_a_dumb_terminal_gets_neither_colour_nor_cursor_movement() -> None:
    result = run_tty("demo", stderr="merged", env=clean_env(TERM="dumb"))
    assert result.returncode == 0, result.out
    assert "\x1b" not in result.out
    assert sorted(_reply_lines(result.out.replace("\r", "").splitlines())) == sorted(REPLIES)
