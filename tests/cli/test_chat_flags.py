"""Options of ``chat`` that cannot act are refused before anything is sent (exit 2, one line),
as ``--hedge-delay`` without ``--hedge`` is: ``--no-failover`` with no backup to fail over to,
a ``--fallback`` or ``--hedge`` that is the model itself, the same backup or hedge twice."""

from __future__ import annotations

import pytest

from rxturn.cli import main

from ._support import closed_port


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            ["--no-failover"],
            "--no-failover needs --fallback MODEL (there is no backup to fail over to)",
        ),
        (["--fallback", "m"], "--fallback m is the model itself"),
        (["--fallback", " m "], "--fallback m is the model itself"),
        (["--fallback", "b", "--fallback", "c", "--fallback", "b"], "--fallback b is given twice"),
        # a hedge to the model itself on the same endpoint is never sent (it was accepted)
        (["--hedge", "m"], "--hedge m is the model itself"),
        (["--hedge", " m ", "--hedge-delay", "0"], "--hedge m is the model itself"),
        (["--hedge", "b", "--hedge", "b"], "--hedge b is given twice"),
    ],
    ids=[
        "no-failover-alone",
        "itself",
        "itself-padded",
        "twice",
        "hedge-itself",
        "hedge-padded",
        "hedge-twice",
    ],
)
def test_an_option_that_cannot_act_is_refused(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    code = main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m", *extra, "hi"])
    assert (code, capsys.readouterr().err) == (2, f"rxturn chat: error: {says}\n")


@pytest.mark.parametrize(
    ("thinking", "says"),
    [
        (
            "8192",
            "--thinking must be below the reply's max_tokens (8192, part of which is the "
            "thinking; chat does not change it), got 8192",
        ),
        (
            str(10**400),
            "--thinking must be below the reply's max_tokens (8192, part of which is the "
            "thinking; chat does not change it), got 10000000000000000...",
        ),
        ("-" + str(10**400), "--thinking must be at least 1024 tokens, got -1000000000000000..."),
    ],
    ids=["the-max-tokens", "huge", "huge-negative"],
)
def test_a_thinking_budget_chat_cannot_send_is_refused_in_words_it_can_act_on(
    thinking: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The client's own words ("raise max_tokens") name a setting chat has no flag for, and
    a pasted number of 400 digits is not echoed whole."""
    url = f"http://127.0.0.1:{closed_port()}"
    args = ["chat", "--provider", "anthropic", "--base-url", url, "--model", "m"]
    code = main([*args, f"--thinking={thinking}", "hi"])
    assert (code, capsys.readouterr().err) == (2, f"rxturn chat: error: {says}\n")
