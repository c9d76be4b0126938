#!/usr/bin/env python
"""Clifford gates applied exactly, against rotations at the Clifford angle, side by side.

The workload is the 115-qubit heavy-hex kicked Ising circuit of ``versus.py`` (``hh``):
rx(0.6) on every qubit, then rzz(-pi/2) on the 132 edges in three colour classes, Z on the
central qubit, Heisenberg. ``rzz(-pi/2) = exp(+i pi/4 ZZ)`` is a Clifford gate. Written as a
rotation, every term it touches keeps a cos(pi/2) ~ 6e-17 copy (the cos branch is never
dropped); written as a ``CliffordGate`` it is applied exactly and keeps nothing extra. Three
runs at the same ``lower_atol``, each a fresh process (``versus_worker.py``):

* ``clifford``: ours, the ZZ layers as ``CliffordGate`` quarter turns;
* ``rotation``: ours, the ZZ layers as rotations;
* ``reference``: ``monoprop==0.9.2`` from PyPI (it has no Clifford gates), rotations, run as a
  black box from its own virtual environment (see ``versus.py``).

Each is repeated ``--repeat`` times, alternating, and the table shows medians: the time of
``propagate`` (and of the first ``expectation_value``), the peak resident memory, the terms
kept, and the value against a run of the Clifford form at a tighter ``lower_atol``
(``--tight-atol``), which tells how much each form's truncation costs in accuracy. The ratios
are the reference's (or our rotation form's) over the Clifford form's; the target is a time
ratio of at least 10 against the reference.

Usage:  python benchmarks/clifford.py [--steps 16] [--lower-atol 1e-4] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from propagate import heavy_hex_workload  # noqa: E402
from versus import DEFAULT_VENV, measure, median_of, reference_python  # noqa: E402

TIME_TARGET = 10.0  # the reference's time over the Clifford form's, at least


def job(steps: int, lower_atol: float, clifford: bool) -> dict:
    hh = heavy_hex_workload()
    return {
        **{k: hh[k] for k in ("n", "layers", "observable", "occupied")},
        "steps": steps,
        "lower_atol": lower_atol,
        "mode": "propagate",
        "front": "pauli",
        "cutoff": hh["n"],
        "repeat": 0,
        "clifford_quarter_turns": clifford,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--lower-atol", type=float, default=1e-4)
    parser.add_argument("--tight-atol", type=float, default=None, help="default lower_atol / 3")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--reference-venv", type=Path, default=DEFAULT_VENV)
    args = parser.parse_args()
    tight_atol = args.tight_atol or args.lower_atol / 3
    ours = Path(sys.executable)
    reference = reference_python(args.reference_venv)
    runs = {
        "clifford": (ours, job(args.steps, args.lower_atol, True)),
        "rotation": (ours, job(args.steps, args.lower_atol, False)),
        "reference": (reference, job(args.steps, args.lower_atol, False)),
    }
    print(
        f"# heavy-hex kicked Ising, 115 qubits, {args.steps} steps, lower_atol "
        f"{args.lower_atol:g}; tight run: Clifford form at {tight_atol:g}",
        flush=True,
    )
    tight = measure(ours, job(args.steps, tight_atol, True), 1, args.timeout)
    print(f"# tight value {tight['value']:.12f} ({tight['terms']} terms)", flush=True)

    met = True
    print(
        f"{'form':9s} {'T':>2s} | {'time s':>8s} {'value s':>8s} {'ratio':>6s} | "
        f"{'peak MB':>8s} {'ratio':>6s} | {'terms':>10s} | {'value':>15s} {'vs tight':>9s}"
    )
    for threads in [int(t) for t in args.threads.split(",")]:
        results: dict[str, list[dict]] = {name: [] for name in runs}
        for r in range(args.repeat):
            order = list(runs) if r % 2 == 0 else list(reversed(runs))
            for name in order:
                python, spec = runs[name]
                results[name].append(measure(python, spec, threads, args.timeout))
        base_time = median_of(results["clifford"], "time")
        base_peak = median_of(results["clifford"], "peak_mb")
        for name, rows in results.items():
            time, peak = median_of(rows, "time"), median_of(rows, "peak_mb")
            value = rows[0]["value"]
            print(
                f"{name:9s} {threads:2d} | {time:8.3f} {median_of(rows, 'value_time'):8.3f} "
                f"{time / base_time:6.2f} | {peak:8.1f} {peak / base_peak:6.2f} | "
                f"{rows[0]['terms']:10d} | {value:15.12f} {abs(value - tight['value']):9.2e}",
                flush=True,
            )
        ratio = median_of(results["reference"], "time") / base_time
        met &= ratio >= TIME_TARGET
        print(f"# T={threads}: the reference takes {ratio:.2f}x the Clifford form's time")
    print(f"# target (reference / clifford time >= {TIME_TARGET:g}): {'met' if met else 'not met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
