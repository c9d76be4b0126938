"""Exceptions raised by monoprop beyond the builtin ones."""


class NumberOfModesInvalidError(ValueError):
    """The operator handed to a propagator has too few or too many modes/qubits.

    Subclasses ``ValueError`` so that ``except ValueError`` keeps working.

    >>> isinstance(NumberOfModesInvalidError("n"), ValueError)
    True
    """


class StaleFunctionalError(RuntimeError):
    """A functional was called after its propagator's graph or operator changed.

    ``build_graph``, an in-place ``contract_partially`` and ``update_initial_operator`` all
    change what a functional replays; take a new functional from the propagator.

    >>> issubclass(StaleFunctionalError, RuntimeError)
    True
    """


class InvalidPropagatorError(RuntimeError):
    """A propagator (or a copy made after, or a functional it returned) whose earlier
    operation failed part-way through; construct a new propagator.

    >>> issubclass(InvalidPropagatorError, RuntimeError)
    True
    """


class MultiShardUnsupported(RuntimeError):
    """A raw layout accessor (``mp_op``, ``indexing``, ``graph``, ``graph_data``) was called on a
    propagator with more than one shard; launch with ``monoprop_NUM_THREADS=1`` to use them.

    >>> issubclass(MultiShardUnsupported, RuntimeError)
    True
    """


class ToleranceWarning(UserWarning):
    """A truncation tolerance (``lower_atol``, ``upper_atol``) that will not do what its value
    suggests: one that a build without a seed ignores, or a negative one.

    The values are kept as given; the warning says what they do and what to pass instead.
    Silence it with ``warnings.filterwarnings("ignore", category=monoprop.ToleranceWarning)``.

    >>> issubclass(ToleranceWarning, UserWarning)
    True
    """
