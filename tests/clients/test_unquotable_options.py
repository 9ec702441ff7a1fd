"""A ``RequestOptions`` field holding a value no message can quote whole (an int Python will
not print, an object whose repr raises, a million-character string) is still refused with a
one-line ConfigError on every wire, never with the error raised while that message was
written, nor with a megabyte of message."""

from __future__ import annotations

import pytest
from unquotable import UNQUOTABLE, UNQUOTABLE_IDS, assert_refused_in_one_line

from rxturn.clients.anthropic import build_anthropic_body
from rxturn.clients.ollama import build_ollama_body
from rxturn.clients.openai import build_openai_body
from rxturn.clients.openai_responses import build_responses_body
from rxturn.errors import ConfigError
from rxturn.messages import Message, Request, RequestOptions, ToolSchema

HI = Request(messages=(Message.user("hi"),))
TOOLED = Request(
    messages=(Message.user("hi"),),
    tools=(ToolSchema(name="get_weather", input_schema={"type": "object"}),),
)
BUILDERS = {
    "anthropic": lambda r, o: build_anthropic_body(r, o, model="c", max_tokens=8192, stream=True),
    "openai": lambda r, o: build_openai_body(r, o, model="g", max_tokens=None, stream=True),
    "openai-responses": lambda r, o: build_responses_body(
        r, o, model="r", max_tokens=None, stream=True
    ),
    "ollama": lambda r, o: build_ollama_body(r, o, model="l", max_tokens=None, stream=True),
}
#: every field of the options; a str is a value a name-like field takes (a long model name, a
#: long cache key is still one)
FIELDS = list(RequestOptions.__struct_fields__)


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("wire", BUILDERS)
def test_an_unquotable_option_is_a_one_line_config_error(
    wire: str, field: str, bad: object
) -> None:
    # before: ValueError ("Exceeds the limit (4300 digits) for integer string conversion"),
    # the object's own RuntimeError, or a message of a million characters
    for request in (HI, TOOLED):
        assert_refused_in_one_line(
            lambda value, request=request: BUILDERS[wire](
                request, RequestOptions(**{field: value})
            ),
            bad,
            ConfigError,
            takes=(str,),
        )
