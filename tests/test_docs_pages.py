"""Runs the ``>>>`` snippets of the documentation pages (docs/*.rst) with plain doctest.

The docs leg of CI (tools/docs) runs them under Sphinx's doctest builder too; here they run in
the ordinary test suite, so that a change that breaks a page's example fails ``pytest``.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(p for p in DOCS.glob("*.rst") if ">>>" in p.read_text(encoding="utf-8"))


def test_the_pages_have_snippets() -> None:
    assert {"getting_started.rst", "truncation.rst", "noise.rst"} <= {p.name for p in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_docs_page_snippets(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a snippet that writes a file writes it here
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        encoding="utf-8",
    )
    assert result.failed == 0 and result.attempted > 0
