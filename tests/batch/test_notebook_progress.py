"""The Python API's default progress: a widget in a Jupyter kernel, nothing on a pipe.

The same code runs twice: in a real ``python3`` kernel driven by ``nbclient`` (a private
kernelspec for this interpreter, :mod:`jupyter_kernel`), and as a plain script whose stdout and
stderr are pipes. It starts the fake provider itself (on 127.0.0.1, a free port) and runs five
rows through ``rxturn.batch.run_batch`` with ``progress`` left at its default.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbclient
import nbformat
import pytest
from jupyter_kernel import JUPYTER_STACK, KERNEL, kernel_env

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

CODE = """\
import asyncio

from rxturn.batch import BatchConfig, run_batch
from rxturn.testing import FakeProvider


async def main():
    async with FakeProvider({"models": {"*": [{"text": "fine"}]}}) as fake:
        config = BatchConfig(
            provider="anthropic", model="m", base_url=fake.base_url, concurrency=2
        )
        rows = [{"id": f"q{i}", "prompt": f"question {i}"} for i in range(5)]
        return await run_batch(rows, config)
"""


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with kernel_env(tmp_path_factory.mktemp("jupyter")):
        yield


def _execute(cells: list[str], cwd: Path) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata.kernelspec = {"name": KERNEL, "display_name": "rxturn tests", "language": "python"}
    client = nbclient.NotebookClient(
        nb,
        timeout=60,  # per cell
        startup_timeout=60,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(cwd)}},
    )
    with warnings.catch_warnings():
        for category in (DeprecationWarning, PendingDeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module=JUPYTER_STACK)
        client.execute()  # raises CellExecutionError on the first error
    return nb


@pytest.mark.slow  # a kernel's start-up takes seconds
@pytest.mark.usefixtures("jupyter")
def test_in_a_jupyter_kernel_the_default_progress_is_a_widget(tmp_path: Path) -> None:
    nb = _execute([CODE, "summary = await main()", "print(summary.ok, summary.total)"], tmp_path)
    run = nb.cells[1].outputs
    widgets = [out for out in run if WIDGET_VIEW in out.get("data", {})]
    assert len(widgets) == 1, run
    assert [out for out in run if out["output_type"] == "stream"] == []  # no text bar
    assert "".join(nb.cells[2].outputs[0]["text"]).split() == ["5", "5"]
    # the bar itself counted the five rows: its progress model ended at 5 of 5
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    bars = [m["state"] for m in state.values() if m["model_name"].endswith("ProgressModel")]
    assert [(bar["value"], bar["max"]) for bar in bars] == [(5, 5)]


@pytest.mark.slow  # a subprocess running the Python API
def test_on_a_pipe_the_default_progress_shows_nothing(tmp_path: Path) -> None:
    script = CODE + "\nsummary = asyncio.run(main())\nassert summary.ok == 5, summary\n"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


async def test_a_progress_that_is_not_a_bool_is_a_config_error() -> None:
    from rxturn.batch import BatchConfig, run_batch
    from rxturn.errors import ConfigError

    config = BatchConfig(provider="anthropic", model="m", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="progress must be"):
        await run_batch([{"id": "a", "prompt": "hi"}], config, progress="yes")  # pyright: ignore[reportArgumentType]
