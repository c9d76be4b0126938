"""Progress bars for the long operations: ``propagate`` and ``build_graph(progress=True)``.

The core reports layers done, layers in all, terms held and the truncation bound so far; this
module draws them as one tqdm bar on stderr. tqdm is imported only when a bar is asked for, so
that importing monoprop stays light.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["layer_progress", "progress_bar"]


@contextmanager
def layer_progress(engine: Any, what: str, enabled: bool) -> Iterator[None]:
    """While the block runs, show the engine's progress as one tqdm bar on stderr (see
    :func:`progress_bar`). Nothing when not enabled."""
    if not enabled:
        yield
        return
    with progress_bar(what, enabled) as report:
        engine.set_progress(report)
        try:
            yield
        finally:
            engine.set_progress(None)


@contextmanager
def progress_bar(
    what: str, enabled: bool
) -> Iterator[Callable[[int, int, int, float], None] | None]:
    """A ``report(layers done, layers, terms held, bound)`` drawing one tqdm bar on stderr
    while the block runs, with the terms and, once truncation dropped something, the bound
    accumulated so far as a postfix; ``None`` when not enabled."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm  # imported only when asked for: importing monoprop stays light

    # The total is known only from the first report, so the bar is made then; a resumed
    # build's first report is where it stands.
    bar = None

    def report(done: int, total: int, terms: int, bound: float) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=total,
                initial=done,
                desc=what,
                unit="layer",
                file=sys.stderr,
                dynamic_ncols=True,
            )
        if bound > 0.0:
            bar.set_postfix(terms=terms, bound=f"{bound:.2e}", refresh=False)
        else:
            bar.set_postfix(terms=terms, refresh=False)
        bar.update(done - bar.n)

    try:
        yield report
    finally:
        if bar is not None:
            bar.close()
