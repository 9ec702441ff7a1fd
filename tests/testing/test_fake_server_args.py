"""The fake provider's address: one it cannot print as a usable URL is refused before it binds
(an empty host bound every interface and printed ``listening on http://:PORT``)."""

from __future__ import annotations

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
    said = f"argument --host: invalid host {host!r}: expected an address"
    assert err == f"rxturn fake-server: error: {said}\n"
    with pytest.raises(ConfigError, match=r"^FakeProvider: host must be an address"):
        FakeProvider(host=host)
