"""The README's Python examples run as written, offline, so they stay true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[str]:
    return _BLOCK.findall(README.read_text())


def _run(code: str) -> subprocess.CompletedProcess[str]:
    # No real key can be used by accident; the dummy ones let "Pointing it at a real provider"
    # build its clients (building one sends nothing).
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(ANTHROPIC_API_KEY="readme-test-key", OPENAI_API_KEY="readme-test-key")
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.slow
def test_quickstart_runs_offline() -> None:
    text = README.read_text()
    section = text.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    out = subprocess.run(
        [sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "Hello, resilient world!" in out.stdout
    assert "2 attempts" in out.stdout  # the scripted 529 was absorbed by one retry


def test_the_first_example_uses_the_resilient_handler() -> None:
    first = _blocks()[0]
    assert "handler=StreamHandler.default()" in first
    assert "passthrough" in README.read_text().split("## Pointing it at", 1)[0]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_blocks())), ids=lambda i: f"block{i + 1}")
def test_every_python_block_runs(index: int) -> None:
    out = _run(_blocks()[index])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_the_composing_example_folds_only_the_attempt_that_served() -> None:
    (block,) = [b for b in _blocks() if "fold_handler" in b]
    out = _run(block)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "[attempt 2: " in out.stdout  # the dropped attempt was retracted ...
    assert lines[-1] == "folded: 'Composed from public operators.'"  # ... and never folded


def test_the_readme_names_exist() -> None:
    import rxturn
    from rxturn.clients import OpenAIClient

    for name in ("AnthropicClient", "OpenAIClient", "OllamaClient", "FallbackManager"):
        assert hasattr(rxturn, name)
    assert callable(OpenAIClient.ollama) and callable(OpenAIClient.from_env)
    assert callable(rxturn.AnthropicClient.from_env)
