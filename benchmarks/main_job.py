#!/usr/bin/env python
"""The README's main job at the default thread count against one thread, in one run.

Runs ``examples/vqe_tfim.py --qubits 8 --layers 4 --no-plot`` (a 68-layer graph of about
2,200 terms under scipy's L-BFGS-B) as a user would: once with the environment as it is
(``monoprop_NUM_THREADS`` unset, so the OpenMP default, usually every core, applies, and
BLAS with its own default threads) and once with ``monoprop_NUM_THREADS=1``, alternately,
``--repeat`` times each. Prints the evaluations per second each run reports, the medians
and their ratio (default / one thread; the target is at least 0.8).

Usage:  python benchmarks/main_job.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "vqe_tfim.py"
TARGET = 0.8


def evaluations_per_second(threads: str | None) -> float:
    env = dict(os.environ)
    env.pop("monoprop_NUM_THREADS", None)
    if threads is not None:
        env["monoprop_NUM_THREADS"] = threads
    cmd = [sys.executable, str(EXAMPLE), "--qubits", "8", "--layers", "4", "--no-plot"]
    out = subprocess.run(
        cmd + ["--no-progress"], env=env, capture_output=True, text=True, check=True
    )
    match = re.search(r"([0-9.]+) evaluations/s", out.stdout)
    if not match:
        sys.exit(f"no evaluations/s in the example's output:\n{out.stdout}{out.stderr}")
    return float(match.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"# {os.cpu_count()} CPUs; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    default, one = [], []
    for k in range(args.repeat):
        order = [(None, default), ("1", one)]
        for threads, sink in order if k % 2 == 0 else order[::-1]:
            sink.append(evaluations_per_second(threads))
    d, o = statistics.median(default), statistics.median(one)
    print(
        f"default threads: {', '.join(f'{v:.0f}' for v in default)} evaluations/s (median {d:.0f})"
    )
    print(f"one thread:      {', '.join(f'{v:.0f}' for v in one)} evaluations/s (median {o:.0f})")
    ratio = d / o
    print(f"default / one thread: {ratio:.2f} (target >= {TARGET})")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
