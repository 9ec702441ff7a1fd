"""The public surface: ``__all__`` is exact, every name resolves, imports stay light."""

from __future__ import annotations

import subprocess
import sys

import rxturn


def test_all_is_sorted_and_resolves() -> None:
    assert rxturn.__all__ == sorted(rxturn.__all__)
    for name in rxturn.__all__:
        assert getattr(rxturn, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        rxturn.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_import_rxturn_loads_neither_aiohttp_nor_tiktoken() -> None:
    code = (
        "import sys, rxturn, rxturn.cli; "
        "print(','.join(m for m in ('aiohttp', 'tiktoken') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_error_tree_has_one_root() -> None:
    from rxturn import errors

    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, errors.RxturnError), name


def test_all_matches_the_lazy_export_table() -> None:
    assert set(rxturn.__all__) == {*rxturn._EXPORTS, "__version__"}  # pyright: ignore[reportPrivateUsage]
