"""A :class:`MockResponse` or :class:`MockTransport` built wrong is a ``ConfigError`` naming
the field where it is built, not a confusing failure deep inside a client later (``chunks=b"…"``
iterated as integers; a status given as a string reached the status checks)."""

from __future__ import annotations

from typing import Any

import pytest

from rxturn.errors import ConfigError
from rxturn.testing import MockRequest, MockResponse, MockTransport


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"status": "200"}, r"^MockResponse: status must be an int from 100 to 599, got '200'$"),
        ({"status": 99}, "status must be an int from 100 to 599, got 99"),
        ({"status": True}, "status must be an int from 100 to 599, got True"),
        ({"chunks": b"event: x\n"}, r"chunks must be a sequence of bytes \(not bytes itself"),
        ({"chunks": "text"}, "chunks must be a sequence of bytes"),
        ({"chunks": [b"ok", "text"]}, r"chunks\[1\] must be bytes, got str"),
        ({"headers": [("a", "b")]}, "headers must be a mapping of str to str"),
        ({"headers": {"retry-after": 2}}, r"headers\['retry-after'\] must be a str, got int"),
        ({"error": "boom"}, "error must be an exception or None, got str"),
    ],
)
def test_a_response_built_wrong_names_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MockResponse(**kwargs)


def test_what_a_response_takes() -> None:
    response = MockResponse(
        429, headers={"Retry-After": "2"}, chunks=[b"{}", b" "], error=OSError("x")
    )
    assert response.status == 429


def test_a_transport_needs_a_handler_or_a_response() -> None:
    with pytest.raises(ConfigError, match="MockTransport: handler must be a callable or a "):
        MockTransport(5)  # pyright: ignore[reportArgumentType]


async def test_a_handler_answering_something_else_is_a_config_error() -> None:
    transport = MockTransport(lambda request: {"status": 200})  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match="MockTransport: the handler returned dict, not a "):
        await transport.send("POST", "http://x/v1", headers={}, body=b"", stream=True)
    assert [type(r) for r in transport.requests] == [MockRequest]
