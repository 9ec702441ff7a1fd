"""``/model B`` in ``rxturn chat --fallback B``: a backup cannot become the primary.

Before, the switch made ``B`` the primary and its own backup: the breaker then "failed over"
from ``B`` to ``B`` (``on_fallback(B, B)``) and struck it until the chain was exhausted. Now
the command says why it is refused and the chat goes on with the model it had.

In-process: the command's ``main`` against a fake provider on a thread of its own."""

from __future__ import annotations

import pytest

from rxturn.cli import main

from ._support import ThreadedFake


def test_chat_model_command_naming_a_backup_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(b"/model b\nhi\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    scenario = {"models": {"a": [{"text": "served by a"}], "*": [{"status": 404}]}}
    with ThreadedFake(scenario) as fake:
        argv = ["chat", "--provider", "ollama", "--base-url", fake.base_url, "--model", "a"]
        code = main([*argv, "--fallback", "b"])
        asked = [record.model for record in fake.records]
    out, err = capsys.readouterr()
    assert (code, out, asked) == (0, "served by a\n", ["a"])
    assert "model: set_primary(...): 'b' is a backup in the fallback chain" in err
    assert err.count("unchanged") == 1
