"""Every public class of monoprop says what its members are in ``help()``.

The classes are those exported in ``monoprop.__all__``, ``monoprop.noise.__all__`` and
``monoprop.optimize.__all__``. For each, every public member defined by a monoprop class (not
inherited from Python's own, like ``Exception.args``) must document itself: a property, method,
classmethod or staticmethod by a non-empty docstring; an attribute stored in ``__slots__``
(whose descriptor cannot carry a docstring without changing ``__slots__``) by a mention as
``name`` in its class's docstring. Public functions and the classes themselves need a docstring
too.
"""

from __future__ import annotations

import inspect
import re
import types

import pytest

import monoprop
import monoprop.noise
import monoprop.optimize

MODULES = [monoprop, monoprop.noise, monoprop.optimize]


def exported() -> list[tuple[str, object]]:
    """``(qualified name, object)`` for every class and function in the modules' ``__all__``."""
    found = []
    for module in MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or isinstance(value, types.FunctionType):
                found.append((f"{module.__name__}.{name}", value))
    return found


def undocumented_members(cls: type) -> list[str]:
    missing = []
    seen: set[str] = set()
    for owner in cls.__mro__:
        if not owner.__module__.startswith("monoprop"):
            continue  # Python's own classes (object, Exception, Generic, ABC, ...)
        for name, raw in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)  # the definition nearest in the MRO is the one help() shows
            if isinstance(raw, (staticmethod, classmethod)):
                raw = raw.__func__
            if isinstance(raw, property) or inspect.isfunction(raw):
                if not (raw.__doc__ or "").strip():
                    missing.append(f"{owner.__qualname__}.{name}")
            elif isinstance(raw, types.MemberDescriptorType):  # a __slots__ attribute
                if not re.search(rf"``{re.escape(name)}\b", owner.__doc__ or ""):
                    missing.append(f"{owner.__qualname__}.{name} (slot, not in the docstring)")
    return missing


NAMES = exported()


def test_the_walk_finds_the_public_api():
    names = {name for name, _ in NAMES}
    for expected in (
        "monoprop.PauliPropagator",
        "monoprop.MajoranaPropagator",
        "monoprop.Circuit",
        "monoprop.ExpGate",
        "monoprop.PauliOperator",
        "monoprop.noise.Channel",
        "monoprop.optimize.Objective",
    ):
        assert expected in names


@pytest.mark.parametrize(("name", "value"), NAMES, ids=[name for name, _ in NAMES])
def test_every_public_member_is_documented(name, value):
    assert (value.__doc__ or "").strip(), f"{name} has no docstring"
    if inspect.isclass(value):
        assert undocumented_members(value) == [], name


def test_the_check_sees_a_missing_docstring():
    class Undocumented:
        """Mentions none of its members."""

        __module__ = "monoprop.example"
        __slots__ = ("kept",)

        @property
        def size(self) -> int:
            return 0

        def method(self) -> None:
            pass

        @staticmethod
        def helper() -> None:
            pass

    prefix = "test_the_check_sees_a_missing_docstring.<locals>.Undocumented."
    assert sorted(undocumented_members(Undocumented)) == [
        prefix + "helper",
        prefix + "kept (slot, not in the docstring)",
        prefix + "method",
        prefix + "size",
    ]
