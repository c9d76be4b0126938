"""The storage the workers of a study share, and how they take turns on it.

:func:`~monoprop.optimize.run_study` workers meet in an Optuna storage. This module makes it
(a database URL becomes an ``RDBStorage`` with a heartbeat, so that the trials of a worker that
died are failed and retried), keeps a running trial's heartbeat, and starts trials while the
budgets allow: the worker's ``n_trials`` and ``timeout``, and the study's ``max_trials``,
counted under a lock the workers share so that they never overshoot it together.
"""

from __future__ import annotations

import threading
import time
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy
from optuna.trial import TrialState

__all__ = ["Budget", "Heartbeat", "heartbeat_interval_of", "load_study", "storage_of", "tell"]

# Trials that count towards max_trials: every trial started, so that workers running at the
# same time do not overshoot (RUNNING counts) and a problem that always fails ends the study
# (FAIL counts); enqueued (WAITING) trials are still to be run. A failed trial that was handed
# to a retry counts once, through its retry.
_BUDGET_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)

# Optuna 4.9 renamed RetryFailedTrialCallback and RDBStorage(failed_trial_callback=...); the old
# names warn from then on, and are all that Optuna 4.0 to 4.8 know.
if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
    _RETRY, _RETRY_KEYWORD = (
        optuna.storages.RetryHeartbeatStaleTrialCallback,
        "heartbeat_stale_trial_callback",
    )
else:  # pragma: no cover - Optuna < 4.9
    _RETRY, _RETRY_KEYWORD = optuna.storages.RetryFailedTrialCallback, "failed_trial_callback"

_SCHEMA_ATTEMPTS = 5

# Seconds between two looks at a full study while trials run elsewhere.
_POLL = 1.0
# Seconds a worker waits past the grace period for a silent trial to be found dead: a poll
# and the one-second resolution of SQLite's clock.
_SLACK = 2.0

# A child of Optuna's logger: its handler and verbosity (optuna.logging.set_verbosity) apply.
_logger = optuna.logging.get_logger("optuna.monoprop")


def load_study(storage, study_name, sampler, pruner, directions) -> optuna.Study:
    return optuna.create_study(
        storage=storage,
        study_name=study_name,
        sampler=sampler,
        pruner=pruner,
        directions=directions,
        load_if_exists=True,
    )


def storage_of(storage: Any, heartbeat: dict | None) -> Any:
    """The storage object: ``storage`` itself unless it is a URL (or ``None``, the default
    SQLite file), which becomes an ``RDBStorage``, with a heartbeat unless it is in memory."""
    if storage is None:
        storage = f"sqlite:///{Path.cwd() / 'monoprop.db'}"
    if not isinstance(storage, str):
        return storage
    # Workers on one SQLite file take turns writing: wait for the lock, do not fail.
    engine = {"connect_args": {"timeout": 60}} if storage.startswith("sqlite") else None
    in_memory = storage in ("sqlite://", "sqlite:///") or ":memory:" in storage
    with warnings.catch_warnings():  # the heartbeat and its retry are "experimental" in Optuna
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        extra: dict[str, Any] = {}
        if heartbeat is not None and not in_memory:
            extra = {**heartbeat, _RETRY_KEYWORD: _RETRY(max_retry=heartbeat["max_retry"])}
            del extra["max_retry"]
        for attempt in range(1, _SCHEMA_ATTEMPTS + 1):
            try:
                return optuna.storages.RDBStorage(storage, engine_kwargs=engine, **extra)
            except sqlalchemy.exc.DatabaseError:
                # Workers that start together on a new database race to create its tables; the
                # losers see "table ... already exists" and find the tables there when they
                # retry.
                if attempt == _SCHEMA_ATTEMPTS:
                    raise
                time.sleep(0.1 * attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def heartbeat_interval_of(storage: Any) -> int | None:
    """The storage's heartbeat interval in seconds, ``None`` where it has no heartbeat."""
    get = getattr(storage, "get_heartbeat_interval", None)
    return None if get is None else get()


def _grace_period(storage: Any) -> int | None:
    """How long a trial's heartbeat may be silent before it counts as dead (Optuna's rule)."""
    interval = heartbeat_interval_of(storage)
    if interval is None:
        return None
    grace = getattr(storage, "grace_period", None)
    return 2 * interval if grace is None else int(grace)


def _fail_stale_trials(study: optuna.Study) -> None:
    """Mark failed the running trials whose heartbeat stopped; the storage's callback (the
    retry) runs for each. Does nothing on a storage without a heartbeat."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def _ask(study: optuna.Study) -> optuna.Trial:
    with warnings.catch_warnings():
        # Optuna warns that ask() does not send the heartbeat optimize() sends; run_study does.
        warnings.filterwarnings("ignore", "Heartbeat of storage", UserWarning)
        return study.ask()


def tell(study: optuna.Study, trial: optuna.Trial, values, state, attributes: dict) -> bool:
    """Store the trial's outcome. False, with a warning, if another worker marked the trial
    failed while it ran here (its heartbeat looked dead): its retry runs it again."""
    try:
        for key, value in attributes.items():
            trial.set_user_attr(key, value)
    except optuna.exceptions.UpdateFinishedTrialError:
        _logger.warning(
            f"Trial {trial.number} was marked failed by another worker while it ran here (no "
            "heartbeat within the grace period; a longer grace_period avoids this); its result "
            "is dropped and its retry, if any, runs it again."
        )
        return False
    study.tell(trial, values, state=state, skip_if_finished=True)
    return True


class Budget:
    """Starts this worker's trials while ``n_trials`` of its own, ``max_trials`` in the study
    and ``timeout`` allow. Runs on the root rank only."""

    def __init__(self, study, storage, n_trials, max_trials, deadline) -> None:
        self.study, self.storage, self.n_trials, self.max_trials = (
            study,
            storage,
            n_trials,
            max_trials,
        )
        self.deadline, self.grace, self.started = deadline, _grace_period(storage), 0
        self.trial: Any = None

    def start(self) -> bool:
        """Ask the study for a trial (``self.trial``) if one may start; whether one did.

        When the study is full while trials run elsewhere, wait for them up to the grace
        period: a trial whose worker died is then failed, its retry frees its place, and this
        worker runs it."""
        self.trial = None
        if self._expired() or (self.n_trials is not None and self.started >= self.n_trials):
            return False
        until = None if self.grace is None else time.monotonic() + self.grace + _SLACK
        while True:
            _fail_stale_trials(self.study)
            if self.max_trials is None:
                self.trial = _ask(self.study)
                break
            # Count and ask under the storage's lock, so that two workers never both take the
            # last place.
            with _study_lock(self.storage, self.study.study_name):
                counted, running = _count(self.study)
                if counted < self.max_trials:
                    self.trial = _ask(self.study)
                    break
            if not running or until is None or self._expired() or time.monotonic() > until:
                return False
            time.sleep(_POLL)
        self.started += 1
        return True

    def _expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


@contextmanager
def _study_lock(storage: Any, study_name: str) -> Iterator[None]:
    """Hold a lock that the other workers on ``storage`` take for the same study: an advisory
    lock on PostgreSQL and MySQL, a ``flock`` of the database file on SQLite; none for other
    storages (a worker there may start one trial past ``max_trials`` at the same instant as
    another)."""
    rdb = isinstance(storage, optuna.storages.RDBStorage)
    engine: Any = storage.engine if rdb else None
    dialect = None if engine is None else engine.dialect.name
    name = f"monoprop.run_study:{study_name}"
    if dialect == "postgresql":
        with engine.begin() as connection:  # the lock ends with the transaction
            key = zlib.crc32(name.encode()) - 2**31
            connection.execute(sqlalchemy.text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
            yield
    elif dialect == "mysql":
        with engine.connect() as connection:
            lock = {"name": name[:64]}
            connection.execute(sqlalchemy.text("SELECT GET_LOCK(:name, -1)"), lock)
            try:
                yield
            finally:
                connection.execute(sqlalchemy.text("SELECT RELEASE_LOCK(:name)"), lock)
    elif dialect == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        import fcntl  # POSIX; SQLite's own locks are fcntl's, which flock does not touch

        with open(engine.url.database, "rb") as database:
            fcntl.flock(database, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(database, fcntl.LOCK_UN)
    else:
        yield


def _count(study: optuna.Study) -> tuple[int, bool]:
    """``(trials that count towards max_trials, whether any trial is running)``. A failed
    trial that was retried counts once, through its retry (which names it in its
    ``retry_history`` system attribute)."""
    trials = study.get_trials(deepcopy=False)
    retried = {number for t in trials for number in t.system_attrs.get("retry_history", ())}
    counted = sum(t.state in _BUDGET_STATES and t.number not in retried for t in trials)
    return counted, any(t.state == TrialState.RUNNING for t in trials)


class Heartbeat:
    """Record every ``interval`` seconds, in a thread, that trial ``trial_id`` is alive."""

    def __init__(self, storage: Any, trial_id: int, interval: int) -> None:
        self._storage, self._trial_id, self._interval = storage, trial_id, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> None:
        # The first beat before the trial runs: a trial without one is never found dead.
        self._storage.record_heartbeat(self._trial_id)
        self._thread.start()

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._storage.record_heartbeat(self._trial_id)
            except Exception as error:  # a missed beat is not fatal: the next one may succeed
                _logger.warning(f"Heartbeat of trial id {self._trial_id} not recorded: {error}")
