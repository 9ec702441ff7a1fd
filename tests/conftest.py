"""Suite-wide setup: rxturn's own pytest plugin (``scheduler``, ``clean``, ``scripted_client``,
``fake_provider``, ``fake_client``), and a stdin.

CI may start the suite with file descriptor 0 closed. Python then sets ``sys.stdin`` and
``sys.__stdin__`` to ``None``, and IPython, which jupyter_client imports to run the notebook
tests, asserts that a stdin exists. So when there is none, stdin becomes ``/dev/null``. Because
``open`` takes the lowest free descriptor, that is fd 0, and child processes inherit it as well.
"""

from __future__ import annotations

import os
import sys

# the virtual-time kit and fake-provider fixtures rxturn ships for its users' tests
pytest_plugins = ["rxturn.testing.pytest_plugin"]

if sys.__stdin__ is None:
    sys.stdin = sys.__stdin__ = open(os.devnull)  # noqa: SIM115 - lives as long as the process
