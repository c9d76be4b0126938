"""pytest setup for the tests that run under mpiexec."""

import tempfile
from pathlib import Path


def pytest_configure(config):
    # The ranks run pytest side by side; sharing one temporary root, their clean-ups of
    # old numbered directories race. Each rank gets its own root instead.
    if config.option.basetemp is None:
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        if world.size > 1:
            root = Path(tempfile.gettempdir()) / f"pytest-monoprop-mpi-{world.size}-{world.rank}"
            config.option.basetemp = root
