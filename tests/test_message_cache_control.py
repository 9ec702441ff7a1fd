"""An Anthropic block's ``cache_control`` in a message dict: kept as a CachePoint after the
block (msgspec dropped it as an unknown field, and a request lost its breakpoint), and the
Anthropic request built from it puts the same ``cache_control`` back on that block."""

from __future__ import annotations

from typing import Any

import pytest

from rxturn.clients.anthropic import build_anthropic_body
from rxturn.errors import ConfigError
from rxturn.messages import (
    CachePoint,
    CacheTTL,
    Message,
    Request,
    RequestOptions,
    TextPart,
    as_message,
)


def _with(control: object) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": "long", "cache_control": control}, "now?"],
    }


@pytest.mark.parametrize("ttl", [None, "5m", "1h"])
def test_a_blocks_cache_control_is_a_cache_point_after_it(ttl: CacheTTL | None) -> None:
    control = {"type": "ephemeral"} | ({"ttl": ttl} if ttl else {})
    message = as_message(_with(control), "history[0]")
    assert message == Message(
        role="user", content=(TextPart("long"), CachePoint(ttl), TextPart("now?"))
    )
    body: Any = build_anthropic_body(
        Request(messages=(message,)), RequestOptions(), model="m", max_tokens=9, stream=True
    )
    sent = body["messages"][0]["content"]
    assert sent[0] == {"type": "text", "text": "long", "cache_control": control}
    assert sent[1] == {"type": "text", "text": "now?"}


def test_a_null_cache_control_is_no_breakpoint() -> None:
    assert as_message(_with(None), "m").content == (TextPart("long"), TextPart("now?"))


@pytest.mark.parametrize(
    "control", [{"type": "persistent"}, {"type": "ephemeral", "ttl": "2h"}, "ephemeral"]
)
def test_a_cache_control_no_api_takes_is_refused_naming_the_block(control: object) -> None:
    with pytest.raises(ConfigError, match=r"^history\[2\]\.content\[0\]\.cache_control must be"):
        as_message(_with(control), "history[2]")


def test_an_openai_parts_breakpoint_is_a_cache_point_after_it() -> None:
    part = {"type": "text", "text": "long", "prompt_cache_breakpoint": {"mode": "explicit"}}
    message = as_message({"role": "user", "content": [part, "now?"]}, "m")
    assert message.content == (TextPart("long"), CachePoint(), TextPart("now?"))


@pytest.mark.parametrize(
    "breakpoint", [{"mode": "explicit", "ttl": "12h"}, {"mode": "implicit"}, "explicit"]
)
def test_an_openai_breakpoint_no_cache_point_carries_is_refused(breakpoint: object) -> None:
    part = {"type": "input_text", "text": "long", "prompt_cache_breakpoint": breakpoint}
    with pytest.raises(
        ConfigError, match=r"^m\.content\[0\]\.prompt_cache_breakpoint must be \{'mode'"
    ):
        as_message({"role": "user", "content": [part]}, "m")
