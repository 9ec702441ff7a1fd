"""docs/observability.md's example runs as printed and exports the spans it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


@pytest.mark.slow
def test_the_console_example_runs() -> None:
    example = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)[0]
    out = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    names = re.findall(r'"name": "([^"]+)"', out.stdout)
    assert names == [
        "rxturn.attempt",
        "rxturn.attempt",
        "chat claude-sonnet-4-5",
        "invoke_agent rxturn",
    ]
    assert '"error.type": "OverloadedError"' in out.stdout
