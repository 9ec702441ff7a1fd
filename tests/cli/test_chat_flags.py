"""Options of ``chat`` that cannot act are refused before anything is sent (exit 2, one line),
as ``--hedge-delay`` without ``--hedge`` is: ``--no-failover`` with no backup to fail over to,
a ``--fallback`` that is the model itself, the same backup twice."""

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
    ],
    ids=["no-failover-alone", "itself", "itself-padded", "twice"],
)
def test_an_option_that_cannot_act_is_refused(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    code = main(["chat", "--provider", "ollama", "--base-url", url, "--model", "m", *extra, "hi"])
    assert (code, capsys.readouterr().err) == (2, f"rxturn chat: error: {says}\n")
