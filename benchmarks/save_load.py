#!/usr/bin/env python
"""Saving and loading a built graph: throughput and file size against the graph in memory.

The workload is the Fermi-Hubbard Hamiltonian-variational graph of ``replay.py`` (6 sites, 3
steps, no truncation: about 53 million graph entries; ``--quick``: 4 sites, 2 steps). It builds
the graph, saves it (``prop.save``) to a directory under ``--dir`` (default: a temporary
directory), loads it back (``monoprop.load``) at the same thread count, checks that value and
gradient are bitwise the original's, and prints

* save and load time and throughput (GB/s of file written or read), best of ``--repeat``;
* the file size per graph entry, and the file size against ``memory()`` (terms, index, graph)
  of the propagator in memory;
* the same build with checkpoints (``build_graph(circuit, checkpoint=path,
  checkpoint_every=s)``), at ``s`` = a quarter of the plain build's time and with only the
  final save, against the plain build; their graphs are checked to be bitwise the plain
  build's.

The load reads every byte twice (checksum, then .npy) and rebuilds each shard's hash index from
its keys, so it is slower than the save. Timings depend on the disk and its cache: the first
save of a run goes to fresh pages.

Usage:  python benchmarks/save_load.py [--quick] [--repeat 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from replay import hubbard  # noqa: E402

import monoprop  # noqa: E402


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()

    _, cls, observable, occupied, circuit, config = hubbard(args.quick)
    prop = cls(observable, occupied, **config)
    start = time.perf_counter()
    prop.build_graph(circuit)
    build = time.perf_counter() - start
    x = np.random.default_rng(0).uniform(-0.5, 0.5, prop.n_parameters)
    value, gradient = prop.expectation_value_and_gradient(x)
    entries = sum(prop.graph_size())
    memory = prop.memory()
    in_memory = memory["terms"] + memory["index"] + memory["graph"]

    root = Path(tempfile.mkdtemp(dir=args.dir))
    path = root / "hubbard"
    try:
        saves, loads = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            prop.save(path)
            saves.append(time.perf_counter() - start)
            start = time.perf_counter()
            loaded = monoprop.load(path)
            loads.append(time.perf_counter() - start)
        size = folder_bytes(path)
        loaded_value, loaded_gradient = loaded.expectation_value_and_gradient(x)
        if loaded_value != value or loaded_gradient.tobytes() != gradient.tobytes():
            raise SystemExit("the loaded graph's value or gradient differs from the original's")
        del loaded
        checkpointed_builds = {}
        for every in (build / 4, 1e9):  # four checkpoints; only the final save
            checkpointed = cls(observable, occupied, **config)
            start = time.perf_counter()
            checkpointed.build_graph(
                circuit, checkpoint=root / "checkpoint", checkpoint_every=every
            )
            checkpointed_builds[every] = time.perf_counter() - start
            again = checkpointed.expectation_value_and_gradient(x)
            if again[0] != value or again[1].tobytes() != gradient.tobytes():
                raise SystemExit(
                    "a checkpointed build's value or gradient differs from the plain one's"
                )
            del checkpointed
    finally:
        shutil.rmtree(root, ignore_errors=True)

    save, load = min(saves), min(loads)
    print(
        f"# hubbard{' (quick)' if args.quick else ''}: {prop.size()} terms, "
        f"{entries:.4g} graph entries, T = {prop.num_threads}, build {build:.2f} s"
    )
    print(
        f"in memory (terms + index + graph): {in_memory / 1e6:.1f} MB;  file: {size / 1e6:.1f} MB "
        f"({size / in_memory:.2f}x), {size / entries:.2f} bytes per graph entry"
    )
    print(
        f"save: {save:.3f} s, {size / save / 1e9:.2f} GB/s;  "
        f"load: {load:.3f} s, {size / load / 1e9:.2f} GB/s (best of {args.repeat}); "
        "the loaded graph's value and gradient are bitwise the original's"
    )
    for every, took in checkpointed_builds.items():
        what = "only the final save" if every > 1e8 else f"checkpoints every {every:.2f} s"
        print(
            f"build with {what}: {took:.2f} s ({took / build:.2f}x the plain build; bitwise "
            "the same graph)"
        )


if __name__ == "__main__":
    main()
