"""Client constructors read the API key from the environment, as the providers' SDKs do.

``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` (the Responses client too) when no key is given; an
explicit key wins; with the provider's own endpoint a missing key is a ``ConfigError`` at
construction. The key that goes on the wire is read from what a real server received.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from rxturn import AnthropicClient, OpenAIClient, OpenAIResponsesClient
from rxturn.errors import ConfigError
from rxturn.messages import Message, Request
from rxturn.testing import FakeProvider

ANTHROPIC_KEY = "sk-ant-env-0123456789abcdef"
OPENAI_KEY = "sk-env-0123456789abcdef"
REQUEST = Request(messages=(Message.user("hi"),))
REPLY = {"models": {"*": [{"text": "ok"}]}}


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


def _client(kind: str, fake: FakeProvider, **kwargs: Any) -> Any:
    if kind == "anthropic":
        return AnthropicClient("m", base_url=fake.base_url, **kwargs)
    if kind == "openai":
        return OpenAIClient("m", base_url=fake.openai_base_url, **kwargs)
    return OpenAIResponsesClient("m", base_url=fake.openai_base_url, **kwargs)


def _sent_key(kind: str, headers: dict[str, str]) -> str | None:
    if kind == "anthropic":
        return headers.get("x-api-key")
    value = headers.get("authorization")
    return value.removeprefix("Bearer ") if value else None


VARIABLE = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
VARIABLE["responses"] = VARIABLE["openai"]
KINDS = ["anthropic", "openai", "responses"]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_environment_key_is_sent_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    key = ANTHROPIC_KEY if kind == "anthropic" else OPENAI_KEY
    monkeypatch.setenv(VARIABLE[kind], key)
    async with FakeProvider(REPLY) as fake:
        async with _client(kind, fake) as client:
            await client.create(REQUEST)
        assert _sent_key(kind, dict(fake.received[0].headers)) == key


@pytest.mark.parametrize("kind", KINDS)
async def test_an_explicit_key_wins(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setenv(VARIABLE[kind], "sk-from-the-environment-000")
    async with FakeProvider(REPLY) as fake:
        async with _client(kind, fake, api_key="sk-explicit-111") as client:
            await client.create(REQUEST)
        assert _sent_key(kind, dict(fake.received[0].headers)) == "sk-explicit-111"


@pytest.mark.parametrize("kind", KINDS)
async def test_another_base_url_may_go_without_a_key(kind: str) -> None:
    async with FakeProvider(REPLY) as fake:
        async with _client(kind, fake) as client:
            reply = await client.create(REQUEST)
        assert _sent_key(kind, dict(fake.received[0].headers)) is None
    assert reply.text == "ok"


@pytest.mark.parametrize(
    "cls", [AnthropicClient, OpenAIClient, OpenAIResponsesClient], ids=lambda c: c.__name__
)
def test_the_providers_own_endpoint_without_a_key_is_a_config_error(cls: Any) -> None:
    variable = "ANTHROPIC_API_KEY" if cls is AnthropicClient else "OPENAI_API_KEY"
    with pytest.raises(ConfigError, match=f"pass api_key= or set {variable}"):
        cls("m")
    with pytest.raises(ConfigError, match=variable):  # the default URL spelled out: the same
        cls("m", base_url=cls("m", api_key="k").base_url + "/")


@pytest.mark.parametrize(
    "cls", [AnthropicClient, OpenAIClient, OpenAIResponsesClient], ids=lambda c: c.__name__
)
@pytest.mark.parametrize("spelling", ["upper", "port"])
def test_the_providers_own_endpoint_spelled_otherwise_is_still_its_own(
    cls: Any, spelling: str
) -> None:
    """Scheme and host are case-insensitive and 443 is https's port: the same endpoint, which
    went without a key (a 401 from the real API, after the retries) when spelled so."""
    own = cls("m", api_key="k").base_url
    scheme, _, rest = own.partition("://")
    host, slash, path = rest.partition("/")
    if spelling == "upper":
        url = f"{scheme.upper()}://{host.upper()}{slash}{path}"
    else:
        url = f"{scheme}://{host}:443{slash}{path}"
    with pytest.raises(ConfigError, match="pass api_key= or set "):
        cls("m", base_url=url)


def test_the_sdks_read_the_same_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The official SDKs take their key from the variables rxturn reads."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    assert anthropic.Anthropic().api_key == ANTHROPIC_KEY
    assert openai.OpenAI().api_key == OPENAI_KEY
    for client in (AnthropicClient("m"), OpenAIClient("m"), OpenAIResponsesClient("m")):
        key = client._key
        assert key is not None
        assert key.reveal() in (ANTHROPIC_KEY, OPENAI_KEY)
        assert "sk-" not in repr(client)


def test_ollama_never_gets_the_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    assert OpenAIClient.ollama("llama3.2")._key is None


def test_a_key_with_whitespace_in_the_environment_is_refused_without_echo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc def")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY holds whitespace") as caught:
        OpenAIClient("m")
    assert "sk-abc" not in str(caught.value)
