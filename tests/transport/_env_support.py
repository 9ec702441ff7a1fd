"""Real loopback pieces for the environment tests: an HTTP proxy and a self-signed CA.

:class:`LoopbackProxy` is a small HTTP/1.1 proxy on 127.0.0.1 — ``CONNECT`` tunnels (what a
client does for an ``https`` URL) and absolute-form forwarding (for ``http``) — that records
what passed through it. :func:`make_ca` makes a CA and a server certificate for 127.0.0.1 with
the ``cryptography`` package, written as PEM files under a temporary directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["CA", "LoopbackProxy", "make_ca"]


@dataclass
class LoopbackProxy:
    """An HTTP proxy on 127.0.0.1; ``seen`` lists ``"CONNECT host:port"`` / ``"GET url"``."""

    seen: list[str] = field(default_factory=list[str])
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set[asyncio.Task[None]])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> LoopbackProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, target, version = request_line.split(" ")
            self.seen.append(f"{method} {target}")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:  # absolute form: http://host:port/path
                rest = target.split("://", 1)[1]
                authority, _, path = rest.partition("/")
                host, port = authority.rsplit(":", 1)
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
                kept = [line for line in header_lines if line and not _hop(line)]
                up_writer.write(
                    f"{method} /{path} {version}\r\n".encode("latin-1")
                    + "".join(f"{line}\r\n" for line in kept).encode("latin-1")
                    + b"connection: close\r\n\r\n"
                )
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)


def _hop(line: str) -> bool:
    name = line.split(":", 1)[0].strip().lower()
    return name in ("connection", "proxy-connection", "keep-alive", "proxy-authorization")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()


@dataclass(frozen=True)
class CA:
    """PEM files: the CA certificate (``ca``), the server's chain (``cert``) and key (``key``)."""

    ca: Path
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_ca(
    directory: Path,
    *,
    names: tuple[str, ...] = ("127.0.0.1", "localhost"),
    expired: bool = False,
) -> CA:
    """A fresh CA and a certificate it signed for ``names`` (IP addresses or host names);
    ``expired``: the certificate's validity ended yesterday (the CA's has not)."""
    now = datetime.datetime.now(datetime.UTC)
    leaf_end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=1)
    alternatives: list[x509.GeneralName] = []
    for name in names:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alternatives.append(x509.DNSName(name))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rxturn test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=2))
        .not_valid_after(leaf_end)
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = CA(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths.ca.write_bytes(ca_cert.public_bytes(pem))
    paths.cert.write_bytes(cert.public_bytes(pem))
    paths.key.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths
