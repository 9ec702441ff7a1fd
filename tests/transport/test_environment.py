"""The transport reads the environment as the SDKs' HTTP client does — proxies and CA bundle.

Everything is real and on loopback: an aiohttp server (HTTP and HTTPS with a certificate from a
CA made here), and a proxy (``_env_support.LoopbackProxy``) that records what passed through.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from _env_support import CA, LoopbackProxy, make_ca
from aiohttp import web

from rxturn import AnthropicClient
from rxturn.errors import ConfigError, ConnectError
from rxturn.messages import Message, Request
from rxturn.testing import FakeProvider
from rxturn.transport import AiohttpTransport

VARIABLES = [
    *(f"{scheme}_proxy" for scheme in ("http", "https", "all", "no")),
    *(f"{scheme}_PROXY" for scheme in ("HTTP", "HTTPS", "ALL", "NO")),
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
async def proxy() -> AsyncIterator[LoopbackProxy]:
    async with LoopbackProxy() as running:
        yield running


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CA:
    return make_ca(tmp_path_factory.mktemp("ca"))


async def _hello(request: web.Request) -> web.Response:
    return web.Response(text=f"hello from {request.path}")


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    """A plain HTTP server on 127.0.0.1; yields its base URL."""
    runner = await _start(None)
    yield _base(runner, "http")
    await runner.cleanup()


@pytest.fixture
async def tls_origin(ca: CA) -> AsyncIterator[str]:
    """An HTTPS server on 127.0.0.1 with a certificate from the test CA."""
    runner = await _start(ca)
    yield _base(runner, "https")
    await runner.cleanup()


async def _start(ca: CA | None) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ca.server_context() if ca else None)
    await site.start()
    return runner


def _base(runner: web.AppRunner, scheme: str) -> str:
    server = runner.server
    assert server is not None
    port = next(iter(runner.addresses))[1]
    return f"{scheme}://127.0.0.1:{port}"


async def _get(transport: AiohttpTransport, url: str) -> bytes:
    response = await transport.send("GET", url, headers={}, body=b"", stream=False)
    try:
        assert response.status == 200
        return await response.read(1 << 20)
    finally:
        await response.aclose()


async def test_http_goes_through_http_proxy(
    monkeypatch: pytest.MonkeyPatch, proxy: LoopbackProxy, origin: str
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    async with AiohttpTransport() as transport:
        assert await _get(transport, origin + "/a") == b"hello from /a"
    assert proxy.seen == [f"GET {origin}/a"]


async def test_a_lower_case_variable_and_a_proxy_without_a_scheme_work(
    monkeypatch: pytest.MonkeyPatch, proxy: LoopbackProxy, origin: str
) -> None:
    monkeypatch.setenv("http_proxy", f"127.0.0.1:{proxy.port}")
    async with AiohttpTransport() as transport:
        await _get(transport, origin + "/b")
    assert proxy.seen == [f"GET {origin}/b"]


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "*", "localhost,127.0.0.1"])
async def test_no_proxy_exempts_a_host(
    monkeypatch: pytest.MonkeyPatch, proxy: LoopbackProxy, origin: str, no_proxy: str
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    async with AiohttpTransport() as transport:
        assert await _get(transport, origin + "/c") == b"hello from /c"
    assert proxy.seen == []


async def test_trust_env_false_ignores_the_proxy(
    monkeypatch: pytest.MonkeyPatch, proxy: LoopbackProxy, origin: str
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    async with AiohttpTransport(trust_env=False) as transport:
        await _get(transport, origin + "/d")
    assert proxy.seen == []


async def test_https_tunnels_through_https_proxy_and_trusts_ssl_cert_file(
    monkeypatch: pytest.MonkeyPatch, proxy: LoopbackProxy, tls_origin: str, ca: CA
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca))
    async with AiohttpTransport() as transport:
        assert await _get(transport, tls_origin + "/e") == b"hello from /e"
    assert proxy.seen == [f"CONNECT {tls_origin.removeprefix('https://')}"]


async def test_without_the_ca_the_certificate_is_refused(tls_origin: str) -> None:
    async with AiohttpTransport() as transport:
        with pytest.raises(ConnectError, match="certificate"):
            await _get(transport, tls_origin + "/f")


async def test_trust_env_false_ignores_ssl_cert_file(
    monkeypatch: pytest.MonkeyPatch, tls_origin: str, ca: CA
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca))
    async with AiohttpTransport(trust_env=False) as transport:
        with pytest.raises(ConnectError, match="certificate"):
            await _get(transport, tls_origin + "/g")


async def test_ssl_cert_dir_is_trusted(
    monkeypatch: pytest.MonkeyPatch, tls_origin: str, ca: CA, tmp_path: Path
) -> None:
    # OpenSSL looks a CA up in a directory by its subject hash: <hash>.0
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(ca.ca)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
    (tmp_path / f"{subject_hash}.0").write_bytes(ca.ca.read_bytes())
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    async with AiohttpTransport() as transport:
        assert await _get(transport, tls_origin + "/h") == b"hello from /h"


async def test_an_explicit_context_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, tls_origin: str, ca: CA
) -> None:
    import ssl

    strict = ssl.create_default_context()  # the system store: the test CA is not in it
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca))
    async with AiohttpTransport(ssl=strict) as transport:
        with pytest.raises(ConnectError, match="certificate"):
            await _get(transport, tls_origin + "/i")


async def test_an_unreadable_ca_bundle_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tls_origin: str, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    async with AiohttpTransport() as transport:
        with pytest.raises(ConfigError, match="CA bundle"):
            await _get(transport, tls_origin + "/j")


async def test_a_client_uses_the_environment_proxy_by_default(
    monkeypatch: pytest.MonkeyPatch, proxy: LoopbackProxy
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    request = Request(messages=(Message.user("hi"),))
    async with (
        FakeProvider({"models": {"*": [{"text": "proxied"}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        reply = await client.create(request)
        assert proxy.seen == [f"POST {fake.base_url}/v1/messages"]
    assert reply.text == "proxied"


async def test_a_proxy_that_cannot_be_reached_is_named(
    monkeypatch: pytest.MonkeyPatch, origin: str
) -> None:
    """The connection that failed is the proxy's: the error says so. It read "cannot connect
    to ORIGIN: Connect call failed ('127.0.0.1', PROXY PORT)", an endpoint that was up and a
    port that was not its own (``rxturn chat --base-url`` on loopback, behind a company proxy)."""
    with socket.socket() as sock:  # a port with nothing listening on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://user:secret@127.0.0.1:{port}")
    async with AiohttpTransport() as transport:
        with pytest.raises(ConnectError) as caught:
            await _get(transport, origin + "/e")
    message = str(caught.value)
    assert message.startswith(f"cannot connect to {origin}/e through the proxy 127.0.0.1:{port} ")
    assert "secret" not in message


@pytest.mark.parametrize(
    ("kwargs", "says"), [({"ssl": "yes"}, "ssl"), ({"trust_env": 1}, "trust_env")]
)
def test_bad_switches_are_config_errors(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        AiohttpTransport(**kwargs)  # pyright: ignore[reportArgumentType]
