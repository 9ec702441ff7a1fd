"""Client construction, secrets, header parsing and import boundaries (no network)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest

from rxturn.clients import AnthropicClient, ModelClient, OllamaClient, OpenAIClient
from rxturn.clients._http import _Secret, parse_should_retry
from rxturn.errors import ConfigError
from rxturn.resilience.backoff import parse_retry_after

KEY = "sk-ant-api03-TESTKEYabcdefghijklmnop"

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


class TestRetryAfter:
    @pytest.mark.parametrize(
        ("headers", "expected"),
        [
            ({"Retry-After": "5"}, 5.0),
            ({"retry-after": "  12  "}, 12.0),
            ({"Retry-After": "0"}, 0.0),
            ({"Retry-After": "1.5"}, 1.5),
            ({"Retry-After": "99999999999"}, 99999999999.0),
            ({"retry-after-ms": "250"}, 0.25),
            ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
            ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
            ({"RETRY-AFTER": "3"}, 3.0),
        ],
        ids=[
            "delta",
            "spaces",
            "zero",
            "fraction",
            "huge",
            "ms",
            "ms-wins",
            "bad-ms-falls-back",
            "case",
        ],
    )
    def test_delta_seconds(self, headers: dict[str, str], expected: float) -> None:
        assert parse_retry_after(headers, now=NOW) == expected

    @pytest.mark.parametrize(
        "value",
        ["", "   ", "soon", "-1", "+5", "1e3", "nan", "inf", "5 s", "1_000"],
        ids=["empty", "blank", "word", "negative", "plus", "exp", "nan", "inf", "unit", "under"],
    )
    def test_garbage_is_none(self, value: str) -> None:
        assert parse_retry_after({"Retry-After": value}, now=NOW) is None

    def test_absent_is_none(self) -> None:
        assert parse_retry_after({}, now=NOW) is None

    def test_http_date_in_the_future(self) -> None:
        date = format_datetime(datetime.fromtimestamp(NOW + 30, UTC), usegmt=True)
        assert parse_retry_after({"Retry-After": date}, now=NOW) == 30.0

    def test_http_date_literal(self) -> None:
        # RFC 9110 example date; 10 s after "now"
        now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC).timestamp()
        assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=now) == 10

    def test_http_date_in_the_past_is_zero(self) -> None:
        date = format_datetime(datetime.fromtimestamp(NOW - 30, UTC), usegmt=True)
        assert parse_retry_after({"Retry-After": date}, now=NOW) == 0.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("false", False), (" TRUE ", True), ("yes", None), (None, None), ("", None)],
)
def test_should_retry(value: str | None, expected: bool | None) -> None:
    assert parse_should_retry(value) is expected


class TestSecrets:
    def test_secret_never_shows_itself(self) -> None:
        secret = _Secret(KEY)
        assert repr(secret) == str(secret) == "'***'"
        assert f"{secret}" == "'***'"
        assert secret.reveal() == KEY
        with pytest.raises(TypeError):
            pickle.dumps(secret)

    @pytest.mark.parametrize("cls", [AnthropicClient, OpenAIClient, OllamaClient])
    def test_repr_shows_model_and_base_url_never_the_key(self, cls: type[Any]) -> None:
        client = cls("some-model", api_key=KEY, base_url="http://127.0.0.1:9/")
        text = repr(client) + str(client) + repr(vars(client))
        assert KEY not in text
        assert repr(client) == f"{cls.__name__}(model='some-model', base_url='http://127.0.0.1:9')"

    def test_a_malformed_key_is_rejected_without_echoing_it(self) -> None:
        with pytest.raises(ConfigError) as info:
            AnthropicClient(api_key="sk-ant-abc\nInjected: 1")
        assert "sk-ant-abc" not in str(info.value)


class TestConstruction:
    def test_defaults_match_the_reference(self) -> None:
        anthropic = AnthropicClient(api_key="k")
        assert (anthropic.model, anthropic.base_url, anthropic.max_tokens) == (
            "claude-sonnet-4-20250514",
            "https://api.anthropic.com",
            8192,
        )
        openai = OpenAIClient(api_key="k")
        assert (openai.model, openai.base_url, openai.max_tokens, openai.stream_usage) == (
            "gpt-4o",
            "https://api.openai.com/v1",
            None,
            True,
        )
        ollama = OpenAIClient.ollama("llama3.2")
        assert (ollama.base_url, ollama.stream_usage) == ("http://localhost:11434/v1", False)
        assert OllamaClient().base_url == "http://localhost:11434"

    @pytest.mark.parametrize(
        ("base_url", "shown"),
        [
            ("http://h/v1?api-key=SECRET-VALUE", "'http://h/v1'"),
            ("http://h/v1?", "'http://h/v1'"),
            ("http://h/v1#SECRET-VALUE", "'http://h/v1'"),
            ("https://h?key=SECRET-VALUE#SECRET-VALUE", "'https://h'"),
        ],
    )
    @pytest.mark.parametrize("cls", [AnthropicClient, OpenAIClient, OllamaClient])
    def test_a_query_or_fragment_is_refused_without_echoing_it(
        self, cls: type[Any], base_url: str, shown: str
    ) -> None:
        """A path joined after a query would land inside it (``?key=S/chat/completions``), and
        some providers take keys in the query: refused, the URL shown without it."""
        with pytest.raises(ConfigError, match="query string or fragment") as caught:
            cls("m", api_key="k", base_url=base_url)
        text = str(caught.value)
        assert shown in text and "SECRET" not in text and "\n" not in text

    @pytest.mark.parametrize(
        "base_url",
        [
            "http://x:99999?key=SECRET-VALUE",
            "http://u:SECRET-VALUE@x:99999/v1",
            "ftp://x/v1?key=SECRET-VALUE",
            "x/v1#SECRET-VALUE",
        ],
    )
    def test_an_invalid_url_is_named_without_its_query_or_userinfo(self, base_url: str) -> None:
        with pytest.raises(ConfigError, match="base_url") as caught:
            OpenAIClient("m", api_key="k", base_url=base_url)
        assert "SECRET" not in str(caught.value)

    @pytest.mark.parametrize("cls", [AnthropicClient, OpenAIClient, OllamaClient])
    def test_clients_satisfy_the_protocol(self, cls: type[Any]) -> None:
        assert isinstance(cls("m", api_key="k"), ModelClient)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"model": ""}, "model must be a non-empty string"),
            ({"base_url": "api.anthropic.com"}, "absolute http"),
            ({"base_url": "ftp://x"}, "absolute http"),
            ({"base_url": "https://user:pw@x"}, "credentials"),
            ({"base_url": "http://x:99999"}, "not a valid URL"),
            ({"connect_timeout": 0}, "connect_timeout"),
            ({"read_timeout": -1}, "read_timeout"),
            # before, accepted here and refused by the transport at the first request
            ({"connect_timeout": float("inf")}, "connect_timeout must be finite"),
            ({"read_timeout": float("inf")}, "read_timeout must be finite"),
            ({"max_tokens": 0}, "max_tokens"),
            # before, accepted and sent; the batch run already refused it as a typo
            ({"max_tokens": 2**31}, r"max_tokens must be at most 2147483647 \(2\*\*31 - 1\)"),
            (
                {"max_tokens": 10**400},
                r"max_tokens must be at most 2147483647 .*, got an integer of about 401 digits$",
            ),
            ({"extra_headers": {"x-a": "1\r\nx-b: 2"}}, "line break"),
            # before, sent as it was and refused by the server as a 400 after the request
            ({"extra_headers": {"X Trace:": "1"}}, "not an HTTP header name"),
            ({"extra_headers": {"": "1"}}, "not an HTTP header name"),
            ({"api_key": ""}, "api_key"),
        ],
        ids=[
            "model",
            "no-scheme",
            "scheme",
            "userinfo",
            "port",
            "connect",
            "read",
            "connect-inf",
            "read-inf",
            "max-tokens",
            "max-tokens-2**31",
            "max-tokens-10**400",
            "header-crlf",
            "header-name",
            "header-empty-name",
            "empty-key",
        ],
    )
    def test_bad_arguments_are_config_errors(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ConfigError, match=match):
            AnthropicClient(**kwargs)

    def test_from_env_reads_the_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-TESTKEY123456")
        anthropic = AnthropicClient.from_env("claude-x", base_url="http://127.0.0.1:1")
        assert (
            anthropic._auth_headers(anthropic._key.reveal() if anthropic._key else None)[
                "x-api-key"
            ]
            == KEY
        )
        openai = OpenAIClient.from_env()
        assert openai._auth_headers("k") == {"authorization": "Bearer k"}
        assert openai._key is not None and openai._key.reveal() == "sk-openai-TESTKEY123456"

    @pytest.mark.parametrize(
        ("cls", "variable"),
        [(AnthropicClient, "ANTHROPIC_API_KEY"), (OpenAIClient, "OPENAI_API_KEY")],
    )
    def test_from_env_without_the_variable_names_it(
        self, monkeypatch: pytest.MonkeyPatch, cls: Any, variable: str
    ) -> None:
        monkeypatch.delenv(variable, raising=False)
        with pytest.raises(ConfigError, match=variable):
            cls.from_env()
        monkeypatch.setenv(variable, "  ")
        with pytest.raises(ConfigError, match=variable):
            cls.from_env()

    def test_plain_constructor_reads_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        key = AnthropicClient()._key
        assert key is not None and key.reveal() == KEY


def test_importing_clients_and_transport_does_not_load_aiohttp() -> None:
    code = (
        "import sys, rxturn.clients, rxturn.transport, rxturn.sources; "
        "from rxturn.clients import AnthropicClient, OpenAIClient, OllamaClient; "
        "from rxturn.transport import AsyncTransport, HttpResponse; "
        "AnthropicClient(api_key='k'); OpenAIClient.ollama('m'); OllamaClient(); "
        "print('aiohttp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _top_level_imports(path: Any) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_transport_module_imports_aiohttp_at_top_level() -> None:
    import pathlib

    import rxturn

    root = pathlib.Path(rxturn.__file__).parent
    mine = [
        "sources.py",
        "transport/__init__.py",
        "transport/_base.py",
        "clients/__init__.py",
        "clients/_http.py",
        "clients/anthropic.py",
        "clients/openai.py",
        "clients/ollama.py",
    ]
    for relative in mine:
        assert "aiohttp" not in _top_level_imports(root / relative), relative
    assert "aiohttp" in _top_level_imports(root / "transport/aiohttp.py")


@pytest.mark.parametrize(
    "url", ["http://a b", "http://h/\x00x", "http://h/v1\tx", "http://h/p?k=SECRET x"]
)
def test_a_base_url_with_a_space_or_control_character_is_refused(url: str) -> None:
    from rxturn.clients._connection import check_base_url

    with pytest.raises(ConfigError, match="holds a space or a control character") as caught:
        check_base_url(url)
    assert "SECRET" not in str(caught.value)


def test_a_batch_config_base_url_follows_the_clients_rule() -> None:
    from rxturn.batch import BatchConfig

    with pytest.raises(ConfigError, match="query string") as caught:
        BatchConfig(provider="openai", model="m", base_url="http://h/v1?key=SECRET").check()
    assert "SECRET" not in str(caught.value)
    with pytest.raises(ConfigError, match="absolute http") as caught:
        BatchConfig(provider="openai", model="m", base_url="ftp://h/?key=SECRET").check()
    assert "SECRET" not in str(caught.value)
