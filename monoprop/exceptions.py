"""Exceptions raised by monoprop beyond the builtin ones."""


class NumberOfModesInvalidError(ValueError):
    """The operator handed to a propagator has too few or too many modes/qubits.

    Subclasses ``ValueError`` so that ``except ValueError`` keeps working.

    >>> isinstance(NumberOfModesInvalidError("n"), ValueError)
    True
    """
