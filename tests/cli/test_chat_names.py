"""Model names are sent as ``chat`` checks them: without the surrounding whitespace a shell
variable or a paste brings (``--model " m "``). The checks read them stripped (``--fallback " m "``
is the model itself) and a fallback chain routes them stripped, but without ``--fallback`` the
request carried the name padded, which a provider answers with a 404 for a model that does not
exist.

In-process: the command's ``main`` against a fake provider on a thread of its own."""

from __future__ import annotations

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

SCENARIO = {"models": {"m": [{"text": "served"}], "*": [{"status": 404}]}}


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
@pytest.mark.parametrize("model", [" m ", "m\n", "\tm"], ids=["spaces", "newline", "tab"])
def test_a_padded_model_name_is_sent_stripped(
    provider: str, model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadedFake(SCENARIO) as fake:
        url = fake.base_url if provider != "openai" else fake.openai_base_url
        args = ["chat", "--provider", provider, "--base-url", url]
        code = main([*args, "--model", model, "hi"])
        asked = [record.model for record in fake.records]
    assert (code, capsys.readouterr().out, asked) == (0, "served\n", ["m"])
