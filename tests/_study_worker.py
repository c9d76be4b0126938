"""run_study workers as processes of their own, for the tests of workers sharing a study.

Run as a script, this module is one worker::

    python _study_worker.py NAME STORAGE FOLDER [--n-trials N] [--max-trials M]
        [--workers W] [--victim] [--heartbeat 1 --grace 2]

It touches FOLDER/ready-NAME and waits until W workers are ready, so that all take trials.
Each trial suggests ``angle``, records the worker's NAME and takes about 0.1 s. A victim
touches FOLDER/running-NAME in its first trial and sleeps there until it is killed.
Imported, it gives the tests :func:`launch` and :func:`finish`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve()


def launch(name: str, storage: str, folder: Path, *options: str) -> subprocess.Popen:
    """Start worker ``name`` on ``storage``; ``options`` are the script's flags."""
    import monoprop

    env = {
        **os.environ,
        "PYTHONPATH": str(Path(monoprop.__file__).parents[1]),
        "monoprop_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), name, storage, str(folder), *options],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(workers: list[subprocess.Popen], timeout: float = 240) -> None:
    """Wait for the workers; each must succeed. None is left running, whatever happens."""
    try:
        for worker in workers:
            _, err = worker.communicate(timeout=timeout)
            assert worker.returncode == 0, err
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.communicate()


def wait_for(path: Path, worker: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until ``path`` exists; fail if ``worker`` stops first."""
    stop = time.monotonic() + timeout
    while not path.exists():
        if worker.poll() is not None:
            raise AssertionError(f"worker stopped early: {worker.communicate()[1]}")
        if time.monotonic() > stop:
            raise AssertionError(f"{path} did not appear within {timeout} s")
        time.sleep(0.01)


def main() -> None:
    import optuna

    from monoprop import Circuit, ExpGate, PauliOperator, PauliPropagator
    from monoprop.optimize import run_study

    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("storage")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--n-trials", type=int, default=None)
    parser.add_argument("--max-trials", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--victim", action="store_true")
    parser.add_argument("--heartbeat", type=int, default=60)
    parser.add_argument("--grace", type=int, default=None)
    args = parser.parse_args()

    (args.folder / f"ready-{args.name}").touch()
    while len(list(args.folder.glob("ready-*"))) < args.workers:
        time.sleep(0.01)

    def make_problem(trial):
        trial.set_user_attr("worker", args.name)
        angle = trial.suggest_float("angle", -1.0, 1.0)
        if args.victim:
            (args.folder / f"running-{args.name}").touch()
            time.sleep(3600)  # killed here, mid-trial
        prop = PauliPropagator(PauliOperator({"ZZ": 1.0, "XI": 0.5}, 2), [], cutoff=2)
        gates = [ExpGate(PauliOperator({"XY": 1.0}, 2)), ExpGate(PauliOperator({"YI": 1.0}, 2))]
        prop.build_graph(Circuit(gates, 2))
        time.sleep(0.1)  # a trial that takes a while, as real ones do
        return prop, np.full(2, angle)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # No pruning (Optuna's default is a MedianPruner): every trial must complete.
    run_study(
        make_problem,
        n_trials=args.n_trials,
        max_trials=args.max_trials,
        storage=args.storage,
        study_name="shared",
        pruner=optuna.pruners.NopPruner(),
        heartbeat_interval=args.heartbeat,
        grace_period=args.grace,
    )


if __name__ == "__main__":
    main()
