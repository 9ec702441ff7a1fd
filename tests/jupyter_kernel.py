"""A private Jupyter kernel for tests that execute code in a real ``python3`` kernel.

:func:`kernel_env` writes a kernelspec for *this* interpreter into a private directory placed
first on ``JUPYTER_PATH`` (so the kernel imports the rxturn under test, never whatever
``python`` is on ``PATH``), with a private IPython profile directory (no user startup files)
and runtime directory.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["JUPYTER_STACK", "KERNEL", "kernel_env"]

KERNEL = "python3"

#: the Jupyter client stack's modules, whose own deprecation notices (it tracks zmq, tornado,
#: platformdirs and Python itself) a test running code in a kernel is not about
JUPYTER_STACK = r"(jupyter_client|jupyter_core|nbclient|nbformat|zmq|traitlets)(\.|$)"


@contextmanager
def kernel_env(root: Path) -> Iterator[None]:
    """A ``python3`` kernelspec for this interpreter, first on ``JUPYTER_PATH``.

    The spec is written by hand rather than with ``ipykernel.kernelspec.install``: that would
    import IPython into the test process, which fails when the process has no stdin (CI).
    """
    for needed in ("ipykernel", "matplotlib"):  # test dependencies: missing is a failure
        assert importlib.util.find_spec(needed) is not None, f"{needed} is not installed"
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
