"""How the examples run in the sphinx-gallery (docs/conf.py): their arguments and figures.

Each example is a script with command-line options; in the gallery it runs at a small size
(``EXAMPLE_ARGUMENTS``), writes its files into a scratch folder of its own instead of the
examples folder, and the PNG files it writes there are the figures shown on its page, the same
images the script writes when run by hand.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

# Small sizes, so that the whole gallery runs in about a minute on two cores; {out} is the
# example's scratch folder. Every example in examples/ needs an entry: one without is an error.
EXAMPLE_ARGUMENTS: dict[str, list[str]] = {
    "vqe_tfim.py": ["--qubits", "6", "--layers", "3", "--plot", "{out}/vqe_tfim.png"],
    "error_bars.py": ["--qubits", "8", "--points", "21", "--plot", "{out}/error_bars.png"],
    "noisy_vqe.py": ["--qubits", "4", "--layers", "2"],
    "vqe_hubbard.py": ["--sites", "3", "--layers", "2"],
    "adapt_vqe.py": ["--qubits", "4"],
    "distributed.py": ["--rows", "2", "--cols", "3", "--cutoff", "6"],
    "qaoa_landscape.py": ["--nodes", "40", "--grid", "32", "--plot", "{out}/qaoa_landscape.png"],
    "optuna_study.py": [
        "--qubits", "4", "--trials", "8", "--seed", "0",
        "--storage", "sqlite:///{out}/monoprop.db",
    ],
}  # fmt: skip

_SCRATCH = Path(tempfile.mkdtemp(prefix="monoprop-gallery-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def _scratch(src_file: str) -> Path:
    return _SCRATCH / Path(src_file).stem


def reset_argv(gallery_conf: dict[str, Any], script_vars: dict[str, Any]) -> list[str]:
    """``sys.argv[1:]`` for an example: its small size and scratch paths."""
    src_file = script_vars["src_file"]
    name = Path(src_file).name
    if name not in EXAMPLE_ARGUMENTS:
        raise KeyError(f"docs/gallery_support.py gives no arguments for examples/{name}")
    out = _scratch(src_file)
    out.mkdir(parents=True, exist_ok=True)
    return [argument.format(out=out) for argument in EXAMPLE_ARGUMENTS[name]]


def png_scraper(block: Any, block_vars: dict[str, Any], gallery_conf: dict[str, Any]) -> str:
    """Shows the PNG files an example wrote into its scratch folder during a code block."""
    from sphinx_gallery.scrapers import figure_rst

    src_file = block_vars["src_file"]
    out = _scratch(src_file)
    written = sorted(out.glob("*.png")) if out.is_dir() else []
    images = []
    for png, image_path in zip(written, block_vars["image_path_iterator"], strict=False):
        shutil.move(png, image_path)  # moved: a later block shows only its own files
        images.append(image_path)
    if "matplotlib.pyplot" in sys.modules:  # figures left open are not carried to the next
        sys.modules["matplotlib.pyplot"].close("all")
    title = ", ".join(png.name for png in written) + f" written by examples/{Path(src_file).name}"
    return figure_rst(images, gallery_conf["src_dir"], title if images else "")
