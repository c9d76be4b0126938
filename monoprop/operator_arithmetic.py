"""``+``, ``-``, scalar ``*`` and ``/`` and the operator product, written once for every
operator class.

An operator class declares its width (``_size_unit``: ``"qubits"`` reads ``num_qubits``,
``"modes"`` reads ``num_modes``) and supplies three primitives; the operators here do the
operand checks around them:

* ``_combine(other, sign)``: ``self + sign * other`` for ``sign`` in ``{1, -1}``;
* ``_scaled(factor)``: ``factor * self`` for a number ``factor``;
* ``_product(other)``: the operator product ``self * other``.

The operands of ``+``, ``-`` and the product must be operators of the same class (subclasses
included) on the same number of qubits or modes; any other operand gives ``NotImplemented``,
so Python raises its usual ``TypeError``. A NaN or infinite scalar factor or divisor raises
``ValueError`` (``op / inf`` would silently zero the operator). Each result is a new operator;
the operands are left unchanged.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar, Self, TypeGuard

from .validation import check_finite

__all__ = ["OperatorArithmetic", "OperatorArithmeticWithMatmul", "is_scalar"]


def is_scalar(value: object) -> TypeGuard[complex]:
    """True for Python and numpy numbers (the operands of scalar ``*`` and ``/``).

    >>> import numpy as np
    >>> is_scalar(2), is_scalar(np.float64(0.5)), is_scalar(1j), is_scalar("2")
    (True, True, True, False)
    """
    return isinstance(value, numbers.Number)


class OperatorArithmetic:
    """Mixin: ``a + b``, ``a - b``, ``-a``, ``a * b``, ``x * a``, ``a * x`` and ``a / x``.

    >>> from monoprop.fermi import FermiOperator
    >>> a = FermiOperator([[(0, "+")]], [1.0], 1)
    >>> (2 * a - a / 2).coefficients
    [2.0, -0.5]
    """

    __slots__ = ()
    __array_ufunc__ = None  # numpy scalars defer to our __rmul__ instead of broadcasting

    _size_unit: ClassVar[str]
    # The class that declares _size_unit; set by __init_subclass__.
    _operand_type: ClassVar[type]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The class that declares its width is the operand type of its hierarchy: a
        # PauliOperator subclass still adds to a PauliOperator.
        if "_size_unit" in cls.__dict__:
            cls._operand_type = cls

    # The hooks each class supplies; `other` is an operator of the class's own kind.
    def _combine(self, other: Any, sign: int) -> Self:
        raise NotImplementedError

    def _scaled(self, factor: complex) -> Self:
        raise NotImplementedError

    def _product(self, other: Any) -> Self:
        raise NotImplementedError

    def _check_same_size(self, other: Any, verb: str) -> None:
        """Raise ``ValueError`` naming both sizes when the two operators differ in width."""
        attribute = "num_" + self._size_unit
        left, right = getattr(self, attribute), getattr(other, attribute)
        if left != right:
            unit = self._size_unit
            raise ValueError(
                f"Cannot {verb} {type(self).__name__} on {left} {unit} and "
                f"{type(other).__name__} on {right} {unit}: sizes must match. "
                f"Rebuild the smaller operator with the larger size first."
            )

    def __add__(self, other: object) -> Self:
        if not isinstance(other, self._operand_type):
            return NotImplemented
        self._check_same_size(other, "add")
        return self._combine(other, 1)

    def __sub__(self, other: object) -> Self:
        if not isinstance(other, self._operand_type):
            return NotImplemented
        self._check_same_size(other, "subtract")
        return self._combine(other, -1)

    def __neg__(self) -> Self:
        return self._scaled(-1)

    def __mul__(self, other: object) -> Self:
        if isinstance(other, self._operand_type):
            self._check_same_size(other, "multiply")
            return self._product(other)
        if is_scalar(other):
            return self._scaled(_finite_factor(other))
        return NotImplemented

    def __rmul__(self, other: object) -> Self:
        if is_scalar(other):
            return self._scaled(_finite_factor(other))
        return NotImplemented

    def __truediv__(self, other: object) -> Self:
        if not is_scalar(other):
            return NotImplemented
        divisor = check_finite(other, "divisor", fix="divide by a finite number")
        return self._scaled(1 / divisor)  # a zero divisor raises ZeroDivisionError here


def _finite_factor(factor: complex) -> complex:
    return check_finite(factor, "scalar factor", fix="multiply by a finite number")


class OperatorArithmeticWithMatmul(OperatorArithmetic):
    """:class:`OperatorArithmetic` plus ``a @ b``, the same operator product as ``a * b``.

    >>> from monoprop.majorana import MajoranaOperator
    >>> m0 = MajoranaOperator({(0,): 1.0}, 1)
    >>> (m0 @ m0).terms
    {(): (1+0j)}
    """

    __slots__ = ()

    def __matmul__(self, other: object) -> Self:
        if not isinstance(other, self._operand_type):
            return NotImplemented
        self._check_same_size(other, "multiply")
        return self._product(other)
