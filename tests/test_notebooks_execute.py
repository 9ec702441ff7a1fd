"""The notebooks in ``notebooks/`` run top to bottom in a fresh kernel, offline, without errors.

Each notebook is executed by ``nbclient`` in a new ``python3`` kernel whose kernelspec is written
for *this* interpreter into a private directory placed first on ``JUPYTER_PATH`` (so the kernel
imports the rxturn under test, never whatever ``python`` is on ``PATH``), with a private IPython
profile directory (no user startup files) and a per-cell timeout. The stored notebooks carry no
outputs: what a reader sees is produced here, by execution.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbclient
import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 60  # seconds per cell; each notebook as a whole runs in a few seconds
KERNEL = "python3"


def test_the_notebooks_are_there() -> None:
    assert [p.name for p in NOTEBOOKS] == ["01_turn_pipeline.ipynb", "02_resilience_lab.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_notebooks_have_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "a notebook without code cells"
    for cell in code:
        assert cell.outputs == [], f"{path.name}: stored outputs in cell {cell.get('id')}"
        assert cell.execution_count is None, f"{path.name}: stored execution count"
    assert nb.metadata.kernelspec.name == KERNEL


@pytest.fixture(scope="module")
def fresh_kernel_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A ``python3`` kernelspec for this interpreter, first on ``JUPYTER_PATH``.

    The spec is written by hand rather than with ``ipykernel.kernelspec.install``: that would
    import IPython into the test process, which fails when the process has no stdin (CI).
    """
    for needed in ("ipykernel", "matplotlib"):  # test dependencies: missing is a failure
        assert importlib.util.find_spec(needed) is not None, f"{needed} is not installed"
    root = tmp_path_factory.mktemp("jupyter")
    data = root / "share" / "jupyter"
    kernel_dir = data / "kernels" / KERNEL
    kernel_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "rxturn tests",
        "language": "python",
        "metadata": {"debugger": False},
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(data))
        patch.setenv("JUPYTER_PLATFORM_DIRS", "1")
        patch.setenv("JUPYTER_RUNTIME_DIR", str(root / "runtime"))
        patch.setenv("IPYTHONDIR", str(root / "ipython"))
        patch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        yield


# The Jupyter client stack's own deprecation notices (it tracks zmq, tornado, platformdirs
# and Python itself) are not what this test is about; rxturn's code runs in the kernel.
_JUPYTER_STACK = r"(jupyter_client|jupyter_core|nbclient|nbformat|zmq|traitlets)(\.|$)"


def execute(path: Path) -> Any:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    with warnings.catch_warnings():
        for category in (DeprecationWarning, PendingDeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module=_JUPYTER_STACK)
        client.execute()  # raises CellExecutionError, naming the cell, on the first error
    return nb


def outputs(nb: Any) -> list[Any]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def html_outputs(nb: Any) -> list[str]:
    return [
        "".join(out["data"]["text/html"])
        for out in outputs(nb)
        if out.get("output_type") in ("display_data", "execute_result")
        and "text/html" in out.get("data", {})
    ]


def png_count(nb: Any) -> int:
    return sum(1 for out in outputs(nb) if "image/png" in out.get("data", {}))


def errors(nb: Any) -> list[Any]:
    return [out for out in outputs(nb) if out.get("output_type") == "error"]


@pytest.mark.usefixtures("fresh_kernel_env")
def test_turn_pipeline_notebook_runs() -> None:
    nb = execute(NOTEBOOK_DIR / "01_turn_pipeline.ipynb")
    assert errors(nb) == []
    assert png_count(nb) >= 1  # the turn's timeline
    # the live display ended showing the discarded attempt struck through, then the reply
    live = [page for page in html_outputs(nb) if "<del>" in page]
    assert live, "the live text display never showed a retraction"
    text = "\n".join(
        "".join(out.get("text", "")) for out in outputs(nb) if out.get("name") == "stdout"
    )
    assert "breaker tripped: primary → backup" in text
    assert "served by backup" in text


@pytest.mark.usefixtures("fresh_kernel_env")
def test_resilience_lab_notebook_runs() -> None:
    nb = execute(NOTEBOOK_DIR / "02_resilience_lab.ipynb")
    assert errors(nb) == []
    assert png_count(nb) >= 2  # scenarios side by side, and the breaker over virtual time
