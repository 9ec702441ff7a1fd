"""A connection that fails says what to check, and is retried only when a retry can help.

Real servers on 127.0.0.1: an HTTP server asked over ``https://`` (it answers the TLS
ClientHello in plain HTTP), a TLS port asked over ``http://`` (it answers with a TLS alert),
TLS servers whose certificate does not verify (a CA the client does not trust, an expired
certificate, a certificate for another name) — the same on every attempt, so never retried and,
like any failure no retry can fix, handed to same-turn failover — and the transient kind: a port
nobody listens on (a server restarting), a TLS handshake the server cuts short.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from _env_support import CA, make_ca

from rxturn.errors import ConnectError, ReadError, TransportError, is_retryable
from rxturn.resilience.verdicts import PERMANENT, TRANSIENT, classify
from rxturn.transport import AiohttpTransport

SECRET = "sk-ant-api03-tlsnet-SECRET-0123456789abcdef"
Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def raw_server(serve: Serve, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """A TCP (or TLS) server on 127.0.0.1 running ``serve`` per connection; yields its port."""
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), 5)


async def plain_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """What a plain-HTTP server answers to bytes that are no request: a 400, then close."""
    await asyncio.wait_for(reader.read(4096), 5)
    writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


async def tls_alert(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """What a TLS port may answer to a plain-HTTP request: a fatal alert record."""
    await asyncio.wait_for(reader.read(4096), 5)
    writer.write(b"\x15\x03\x03\x00\x02\x02\x46")  # alert, TLS 1.2, fatal protocol_version
    await writer.drain()
    writer.close()


async def cut_handshake(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Reads the ClientHello and closes: the handshake ends in the middle (EOF)."""
    await asyncio.wait_for(reader.read(4096), 5)
    writer.close()


async def https_app(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await plain_http(reader, writer)  # (never reached when the certificate is refused)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def failure(url: str, ssl_context: ssl.SSLContext | None = None) -> TransportError:
    """The error of one request to ``url`` (a key in a header and in the query)."""
    async with AiohttpTransport(
        connect_timeout=5.0, read_timeout=5.0, ssl=ssl_context or True, trust_env=False
    ) as transport:
        with pytest.raises(TransportError) as info:
            await transport.send(
                "POST",
                f"{url}?key={SECRET}",
                headers={"x-api-key": SECRET},
                body=b"{}",
                stream=False,
            )
    return info.value


def check_line(error: TransportError, url: str) -> str:
    """The message: one line, the full URL requested, no key."""
    message = str(error)
    assert "\n" not in message and SECRET not in message and "SECRET" not in message
    assert url in message, message
    return message


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CA]:
    made = tmp_path_factory.mktemp("certificates")
    return {
        "good": make_ca(_dir(made, "good")),
        "expired": make_ca(_dir(made, "expired"), expired=True),
        "other-name": make_ca(_dir(made, "other"), names=("api.rxturn.test",)),
    }


def _dir(parent: Path, name: str) -> Path:
    path = parent / name
    path.mkdir()
    return path


def trusting(ca: CA) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca.ca))


# --- no retry can fix these -------------------------------------------------------------------


def permanent(error: TransportError) -> None:
    """Not retried, not rescued, and it fails over: the verdict of a dead endpoint."""
    assert not is_retryable(error)
    assert classify(error) is PERMANENT
    assert (classify(error).ladder, classify(error).rescuable) == ("none", False)
    assert classify(error).fails_over


async def test_https_to_a_plain_http_port_says_check_the_scheme() -> None:
    async with raw_server(plain_http) as port:
        url = f"https://127.0.0.1:{port}/v1/messages"
        error = await failure(url)
    assert isinstance(error, ConnectError)
    message = check_line(error, url)
    assert "does not speak TLS" in message and "check the URL's scheme" in message
    permanent(error)


async def test_http_to_a_tls_port_that_answers_tls_says_check_the_scheme() -> None:
    async with raw_server(tls_alert) as port:
        url = f"http://127.0.0.1:{port}/v1/messages"
        error = await failure(url)
    assert isinstance(error, ReadError)
    message = check_line(error, url)
    assert "answered in TLS" in message and "check the URL's scheme" in message
    permanent(error)


@pytest.mark.parametrize(
    ("certificate", "trusted", "check"),
    [
        ("good", False, "check the CA bundle: SSL_CERT_FILE / SSL_CERT_DIR"),
        ("expired", True, "check the server's certificate dates and this machine's clock"),
        ("other-name", True, "check the host name in the URL"),
    ],
    ids=["unknown-ca", "expired", "wrong-host-name"],
)
async def test_a_certificate_that_does_not_verify_says_what_to_check(
    certificates: dict[str, CA], certificate: str, trusted: bool, check: str
) -> None:
    ca = certificates[certificate]
    async with raw_server(https_app, ca.server_context()) as port:
        url = f"https://127.0.0.1:{port}/v1/messages"
        error = await failure(url, trusting(ca) if trusted else None)
    assert isinstance(error, ConnectError)
    message = check_line(error, url)
    assert "certificate verify failed" in message and check in message, message
    permanent(error)


async def test_the_good_certificate_trusted_is_served(certificates: dict[str, CA]) -> None:
    # the control: the servers above fail for their certificate, not for the test's plumbing
    ca = certificates["good"]
    async with (
        raw_server(https_app, ca.server_context()) as port,
        AiohttpTransport(ssl=trusting(ca), trust_env=False) as transport,
    ):
        url = f"https://127.0.0.1:{port}/v1/messages"
        response = await transport.send("POST", url, headers={}, body=b"{}", stream=False)
        await response.aclose()
    assert response.status == 400


# --- a retry may help with these --------------------------------------------------------------


async def test_a_refused_connection_is_retried() -> None:
    url = f"https://127.0.0.1:{closed_port()}/v1/messages"
    error = await failure(url)
    assert isinstance(error, ConnectError)
    check_line(error, url)
    assert is_retryable(error) and classify(error) is TRANSIENT


async def test_a_handshake_cut_short_is_retried_and_says_so() -> None:
    async with raw_server(cut_handshake) as port:
        url = f"https://127.0.0.1:{port}/v1/messages"
        error = await failure(url)
    assert isinstance(error, ConnectError)
    message = check_line(error, url)
    assert not message.endswith(": "), message  # it said nothing after the URL
    assert "closed" in message or "reset" in message.lower(), message
    assert is_retryable(error) and classify(error) is TRANSIENT


def test_a_host_name_that_does_not_resolve_says_so_and_is_retried() -> None:
    # no lookup is made here (tests never reach a resolver): the error aiohttp raises for one
    from aiohttp import ClientConnectorDNSError
    from aiohttp.client_reqrep import ConnectionKey

    from rxturn.transport.aiohttp import map_aiohttp_errors

    url = "https://api.rxturn.invalid/v1/messages"
    key = ConnectionKey("api.rxturn.invalid", 443, True, True, None, None, None)
    for code, said in [
        (socket.EAI_NONAME, "Name or service not known"),
        (socket.EAI_AGAIN, "Temporary failure in name resolution"),
    ]:
        raised = ClientConnectorDNSError(key, socket.gaierror(code, said))
        error = map_aiohttp_errors(url, secrets=(SECRET,)).map(raised)
        assert isinstance(error, ConnectError)
        assert str(error) == (
            f"cannot connect to {url}: the host name 'api.rxturn.invalid' does not resolve "
            f"({said}); check the host name"
        )
        # as the SDKs, which retry every connection error: a resolver that is down or slow
        # answers like a name that does not exist, and both clear up
        assert is_retryable(error) and classify(error) is TRANSIENT
