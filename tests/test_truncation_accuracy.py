"""How good the error bars are: the estimate's ratio to the actual error, and the bound's, on
the quick workloads of ``benchmarks/truncation_error.py`` (10-qubit ansatz and random
circuits, the 4x3 TFIM, kicked Ising chains with and without Clifford gates, a noisy TFIM and
a Hubbard chain, in both pictures, after propagate and from graphs at and away from their
seed), each against a state vector or an untruncated run.

The floors sit below what the present model reaches (59% of the cases within 3x, a median
bound of 640 times the actual error) and far above the sum-of-squares estimate and the plain
bound it replaced (5% within 3x, median bound 7000x): a change that loses the reach weights or
the dark branches fails here.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def quick_rows() -> list[dict]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import truncation_error as bench
    finally:
        sys.path.remove(str(BENCHMARKS))
    with contextlib.redirect_stdout(io.StringIO()):
        return bench.accuracy(quick=True)


def test_the_estimate_and_the_bound_track_the_actual_error():
    rows = [r for r in quick_rows() if r["bound"] > 0.0]
    assert len(rows) >= 60
    for r in rows:  # rigorous: never below the actual error (rounding aside)
        assert r["actual"] <= r["bound"] + 1e-12, r
        assert r["estimate"] <= r["bound"] * (1 + 1e-12), r

    def ratio(x: float, actual: float) -> float:
        return (1.0 if x <= 1e-13 else float("inf")) if actual <= 1e-13 else x / actual

    estimates = [ratio(r["estimate"], r["actual"]) for r in rows]
    within = sum(1 / 3 <= e <= 3 for e in estimates) / len(rows)
    assert within >= 0.5, f"estimate within 3x in {within:.0%} of the cases"
    assert 1 / 3 <= statistics.median(estimates) <= 3
    bounds = [r["bound"] / r["actual"] for r in rows if r["actual"] > 1e-13]
    assert statistics.median(bounds) <= 1000, statistics.median(bounds)
