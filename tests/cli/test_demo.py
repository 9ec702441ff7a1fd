"""``rxturn demo`` — the main job — runs the whole story offline and checks it."""

from __future__ import annotations

import subprocess

import pytest


@pytest.mark.slow
def test_demo_plays_the_story_and_exits_0(piped_demo: subprocess.CompletedProcess[str]) -> None:
    out = piped_demo
    text = out.stdout
    notices = out.stderr  # retries, rescue, failures, breaker and model switches: on stderr
    assert "\033[" not in text  # no colour when stdout is not a terminal
    assert "\033[" not in notices  # nor when stderr is not
    assert "↻ attempt 2: HTTP 529" in notices  # the rate-limit ladder absorbed a 529
    assert "breaker tripped: rx-primary → rx-backup" in notices
    assert "serving model: rx-primary → rx-backup" in notices
    assert "serving model: rx-backup → rx-primary" in notices
    assert "tool call get_weather" in text
    rows = {line.split()[1]: line for line in text.splitlines() if line[:2] in {"1 ", "3 ", "5 "}}
    assert " yes " in rows["rescue"]
    assert "rx-backup" in rows["backup"]
    assert "demo check failed" not in text
    # the rescued reply stands on its own line, never glued to a discarded attempt's text
    rescued = "Truncated four times; the non-streaming rescue saved this turn."
    assert f"\n  {rescued}\n" in text
    assert "↻ rescued by the non-streaming request" in notices
