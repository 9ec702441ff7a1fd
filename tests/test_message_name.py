"""An OpenAI message dict's ``name`` (the participant's name, which the model reads): a Message
has no place for it, so it is refused naming the message rather than dropped (the request
would have asked another question without a word); a ``null`` one asks nothing."""

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
