"""What an OpenAI message dict holds that no Message part carries (its ``name``, the
participant's name the model reads; an assistant's deprecated ``function_call`` and ``audio``):
refused naming the message rather than dropped, which would have sent another question without
a word; a ``null`` one asks nothing."""

from __future__ import annotations

import pytest

from rxturn.errors import ConfigError
from rxturn.messages import Message, as_message


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_named_message_is_refused_naming_it(role: str) -> None:
    with pytest.raises(ConfigError, match=r"^history\[4\]: 'name' \(OpenAI's name of the partic"):
        as_message({"role": role, "content": "hi", "name": "bob"}, "history[4]")


def test_a_null_name_is_no_name() -> None:
    assert as_message({"role": "user", "content": "hi", "name": None}, "m") == Message.user("hi")


@pytest.mark.parametrize(
    ("key", "value"),
    [("function_call", {"name": "f", "arguments": "{}"}), ("audio", {"id": "audio_1"})],
)
def test_an_assistants_function_call_or_audio_is_refused_not_dropped(
    key: str, value: object
) -> None:
    # (the text was kept and the call or the audio went missing from the history)
    message = {"role": "assistant", "content": "checking", key: value}
    with pytest.raises(ConfigError, match=rf"^history\[1\]: '{key}' \(.*has no place in a Message"):
        as_message(message, "history[1]")
    assert as_message({**message, key: None}, "m") == Message.assistant("checking")
