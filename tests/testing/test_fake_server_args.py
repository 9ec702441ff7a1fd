"""The fake provider's address: one it cannot print as a usable URL is refused before it binds
(an empty host bound every interface and printed ``listening on http://:PORT``)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from rxturn.cli import main
from rxturn.errors import ConfigError
from rxturn.testing import FakeProvider


@pytest.mark.parametrize("host", ["", "   ", " 127.0.0.1", "127.0.0.1\n"])
def test_a_host_that_is_blank_or_padded_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match=r"^FakeProvider: host must be an address"):
        FakeProvider(host=host)


@pytest.mark.parametrize("port", [-1, 65536, True, 1.5, "80"])
def test_a_port_outside_0_to_65535_is_refused(port: Any) -> None:
    with pytest.raises(ConfigError, match=r"^FakeProvider: port must be an int from 0 to 65535"):
        FakeProvider(port=port)


def test_the_command_refuses_an_empty_host(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:  # argparse's usage error: exit 2
        main(["fake-server", "--host", ""])
    assert exit_info.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("rxturn fake-server: error: argument --host: ")
    assert out.err.count("\n") == 1


@pytest.mark.parametrize(
    "host", ["bad\x1b[31mhost", "a\nb", "a b"], ids=["escape", "newline", "space"]
)
def test_a_host_with_a_control_character_or_a_space_is_refused_in_one_line(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was tried, and the error line quoted it raw: 'cannot listen on bad<ESC>[31mhost', a
    newline splitting the line, an escape sequence reaching the terminal."""
    with pytest.raises(SystemExit) as exit_info:
        main(["fake-server", "--host", host])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    said = (
        f"argument --host: invalid host {host!r}: expected an address such as 127.0.0.1 or ::1 "
        "(an IPv6 address without brackets)"
    )
    assert err == f"rxturn fake-server: error: {said}\n"
    with pytest.raises(ConfigError, match=r"^FakeProvider: host must be an address"):
        FakeProvider(host=host)


@pytest.mark.parametrize("host", ["[::1]", "[127.0.0.1]"])
def test_a_bracketed_host_is_refused_with_the_spelling_to_use(host: str) -> None:
    """'[::1]' is how a URL writes ::1; bound as it is, it went to the resolver and came back as
    a raw socket.gaierror from start()."""
    with pytest.raises(ConfigError) as info:
        FakeProvider(host=host)
    assert str(info.value) == (
        "FakeProvider: host must be an address such as 127.0.0.1 or ::1 (an IPv6 address "
        f"without brackets), got {host!r}"
    )


async def test_a_host_of_no_interface_here_is_one_config_error_line() -> None:
    """192.0.2.1 (TEST-NET-1, never assigned) resolves without DNS but no interface has it:
    start() raised aiohttp's OSError, the address written twice in its text."""
    fake = FakeProvider(host="192.0.2.1")
    with pytest.raises(ConfigError) as info:
        await fake.start()
    assert str(info.value).startswith("FakeProvider: cannot listen on 192.0.2.1:0: ")
    assert "\n" not in str(info.value) and "192.0.2.1" not in str(info.value).split(": ", 2)[2]
    await fake.stop()  # nothing was left running


async def test_a_host_that_does_not_resolve_is_one_config_error_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name the resolver does not know raised a raw socket.gaierror (the resolver is stubbed:
    tests ask no DNS server)."""

    def unknown(*_args: object, **_kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    with pytest.raises(ConfigError) as info:
        async with FakeProvider(host="nowhere.invalid"):
            pass
    assert str(info.value) == (
        "FakeProvider: cannot listen on nowhere.invalid:0: Name or service not known"
    )


def test_the_command_says_a_bind_failure_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The command goes through FakeProvider's check: one line, exit 2, no class name."""
    assert main(["fake-server", "--host", "192.0.2.1"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("rxturn fake-server: error: cannot listen on 192.0.2.1:0: ")
    assert out.err.count("\n") == 1
