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
