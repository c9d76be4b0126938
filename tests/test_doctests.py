"""Runs the ``>>>`` examples in every module's docstrings.

Private modules too: public ones export functions that live in them (doctest finds a
function's examples only in the module that defines it). The compiled core has its own test.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import monoprop

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(monoprop.__path__, "monoprop.")
    if name != "monoprop._core"
)


@pytest.mark.parametrize("name", ["monoprop", *MODULES])
def test_docstring_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as error:  # an optional extra that is not installed
        pytest.fail(f"{name} does not import: {error}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_compiled_core_examples() -> None:
    result = doctest.testmod(monoprop._core, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 2
