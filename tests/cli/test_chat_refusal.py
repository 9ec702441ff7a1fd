"""A refusal is a reply: ``rxturn chat`` shows it. On the OpenAI wires its text is a refusal
part, never a text part and never streamed as text, so a chat that printed the reply's text
alone printed an empty line for it (nothing at all on a terminal), exit 0: the user could not
tell the model had refused. It is one ``[refusal] TEXT`` line, as ``rxturn replay`` shows it.

In-process: the command's ``main`` against a fake provider on a thread of its own."""

from __future__ import annotations

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

SCENARIO = {"models": {"*": [{"text": "Not with that.", "stop_reason": "refusal"}]}}


@pytest.mark.parametrize("no_stream", [[], ["--no-stream"]], ids=["stream", "no-stream"])
@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
def test_an_openai_refusal_is_its_line_on_stdout(
    provider: str, no_stream: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadedFake(SCENARIO) as fake:
        args = ["chat", "--provider", provider, "--base-url", fake.openai_base_url]
        code = main([*args, "--model", "m", *no_stream, "May I?"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (0, "[refusal] Not with that.\n", "")


def test_an_anthropic_refusal_is_its_text(capsys: pytest.CaptureFixture[str]) -> None:
    """Anthropic refuses in text (``stop_reason: "refusal"``): stdout is that text, as for any
    reply."""
    with ThreadedFake(SCENARIO) as fake:
        args = ["chat", "--provider", "anthropic", "--base-url", fake.base_url, "--model", "m"]
        code = main([*args, "May I?"])
    assert (code, capsys.readouterr().out) == (0, "Not with that.\n")
