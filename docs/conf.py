"""Sphinx configuration of the monoprop documentation.

Build (warnings are errors): ``sphinx-build -W --keep-going -b html docs docs/_build/html``;
the snippets of the narrative pages run with ``sphinx-build -W -b doctest docs
docs/_build/doctest``. ``tools/docs`` does both from a fresh virtual environment and opens the
pages in headless Chromium.
"""

from __future__ import annotations

import doctest
import os
import sys
from pathlib import Path

import monoprop

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))  # gallery_support.py

project = "monoprop"
author = "the monoprop developers"
copyright = "2026, the monoprop developers"
version = release = monoprop.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",  # only to include the Markdown benchmark tables (benchmarks/README.md)
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext"}  # every page is reStructuredText
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# benchmarks/README.md is included below the page's own title, from its second heading level.
suppress_warnings = ["myst.header"]
templates_path = ["_templates"]

# Docstrings are reStructuredText prose with Sphinx roles (``code``, :class:`...`) and bullet
# lists of parameters; where one has sections they are NumPy's (a title underlined with
# dashes), so napoleon reads that style and no other.
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

autosummary_generate = True
autosummary_imported_members = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": True}
# A class's page (_templates/autosummary/class.rst) shows its members, with the methods it
# inherits from monoprop's classes (a propagator's from MonomialPropagator); what Python's own
# bases (exceptions, tuples, ABC, Generic) bring is left out.

# Only the ``.. doctest::`` blocks of the pages: the docstrings' own examples, which autodoc
# shows as plain doctest blocks, run in their modules' namespaces under pytest instead.
doctest_default_flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
doctest_test_doctest_blocks = ""

html_theme = "pydata_sphinx_theme"
html_title = f"monoprop {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
# Light or dark as the reader's system is (the theme logs a console error when none is set).
html_context = {"default_mode": "auto"}

# The examples in examples/*.py run during the build (sphinx-gallery), each at the small size
# that gallery_support.EXAMPLE_ARGUMENTS gives it; the PNG files an example writes are the
# figures on its page. examples/cpp is a C++ project, not a Python example: it has no gallery
# header, so sphinx-gallery does not descend into it, and the pattern below keeps it out
# explicitly; the page "The C++ interface" shows it instead.
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r".*\.py$",  # every example is executed, not only plot_*.py
    "ignore_pattern": r"(__init__\.py|[\\/]cpp[\\/])",
    "reset_argv": "gallery_support.reset_argv",
    "image_scrapers": ("gallery_support.png_scraper",),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "show_memory": False,
    # The timing page loads its table scripts from a CDN; the site needs no network.
    "write_computation_times": False,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "capture_repr": (),
}

# Examples print timings and use two threads on a two-core machine; nothing here changes
# how monoprop runs, only where Matplotlib draws.
os.environ.setdefault("MPLBACKEND", "Agg")


def _pages_are_rst(app: object, config: object) -> None:
    # myst_parser registers ".md" as a source suffix; here Markdown is only ever included
    # (benchmarks/README.md, examples/cpp/README.md), never a page of its own. Without .md
    # pages, sphinx-gallery does not take examples/cpp/README.md for a gallery header either.
    config.source_suffix.pop(".md", None)  # type: ignore[attr-defined]


def setup(app: object) -> None:
    app.connect("config-inited", _pages_are_rst, priority=900)  # type: ignore[attr-defined]
