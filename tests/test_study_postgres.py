"""run_study on PostgreSQL, the cluster's storage: three worker processes share one database,
one of them is killed (SIGKILL) in the middle of a trial. The killed trial is failed by the
heartbeat after its grace period and retried by a live worker; no trial is lost, none is
left running, and the study holds max_trials finished trials.

The test starts a throwaway server: initdb in a temporary folder, pg_ctl on a unix socket
there (as the ``postgres`` user when the tests run as root; the server refuses root). It is
skipped only where PostgreSQL's server binaries are not installed (CI installs them).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import optuna
import pytest
from _study_worker import finish, launch, wait_for
from optuna.trial import TrialState

MAX_TRIALS = 9


def _server_binaries() -> Path | None:
    """The folder of initdb and pg_ctl: Debian's /usr/lib/postgresql/<version>/bin, else PATH."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    initdb = shutil.which("initdb")
    return None if initdb is None or not shutil.which("pg_ctl") else Path(initdb).parent


@pytest.fixture
def postgres_url():
    """A ``postgresql+psycopg2://`` URL of a fresh database on a server of its own, stopped
    and removed afterwards."""
    binaries = _server_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    import psycopg2  # the test extra's driver; its absence is an error, not a skip

    as_root = os.geteuid() == 0
    as_user = ["runuser", "-u", "postgres", "--"] if as_root else []
    folder = Path(tempfile.mkdtemp(prefix="monoprop-pg-"))
    if as_root:
        shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"

    def run(*command: str) -> None:
        done = subprocess.run([*as_user, *command], capture_output=True, text=True)
        assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"

    started = False
    try:
        run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
        # Only the unix socket in the temporary folder: no TCP port to collide with.
        options = f"-c listen_addresses='' -k {folder} -p 5432 -c max_connections=50"
        run(
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log"),
            "-w",
            "start",
        )
        started = True
        connection = psycopg2.connect(dbname="postgres", user="postgres", host=str(folder))
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE study")
        connection.close()
        yield f"postgresql+psycopg2://postgres@/study?host={folder}&port=5432"
    finally:
        if started:
            run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_three_workers_one_killed_lose_no_trial(postgres_url, tmp_path):
    common = ("--max-trials", str(MAX_TRIALS), "--heartbeat", "1", "--grace", "2")
    common += ("--workers", "3")
    live = [launch(name, postgres_url, tmp_path, *common) for name in ("a", "b")]
    victim = launch("victim", postgres_url, tmp_path, *common, "--victim")
    try:
        wait_for(tmp_path / "running-victim", victim)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
        finish(live)  # the live workers fill the study and retry the killed trial
    assert victim.returncode == -signal.SIGKILL

    trials = optuna.load_study(study_name="shared", storage=postgres_url).trials
    assert [t.number for t in trials] == list(range(len(trials)))
    (killed,) = [t for t in trials if t.user_attrs["worker"] == "victim"]
    assert killed.state == TrialState.FAIL  # failed by the heartbeat, not left RUNNING
    retries = [t for t in trials if "failed_trial" in t.system_attrs]
    assert [(t.system_attrs["failed_trial"], t.state) for t in retries] == [
        (killed.number, TrialState.COMPLETE)
    ]
    assert retries[0].params == killed.params
    assert retries[0].user_attrs["worker"] in ("a", "b")
    # Every other trial is complete: max_trials of them in all, the retry in the killed one's
    # place; nothing running or waiting.
    assert [t.state for t in trials if t is not killed] == [TrialState.COMPLETE] * MAX_TRIALS
    assert {t.user_attrs["worker"] for t in trials if t is not killed} == {"a", "b"}
