"""The objects of a cluster event as a queueing hint reads them.

Mirrors pkg/scheduler/util/utils.go ``As[T](oldObj, newObj)``: each non-nil object must be of
the type the hint expects, else the hint fails (and the queue then requeues the pod, as
upstream does with a hint's error). ``present`` is the nil check upstream's hints rely on
implicitly (they dereference the object an Add or Delete always carries).
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def _typed(cls: type[T], obj: object | None) -> T | None:
    if obj is None:
        return None
    if isinstance(obj, cls):
        return obj
    raise TypeError(f"expected {cls.__name__}, but got {type(obj).__name__}")


def as_objects(cls: type[T], old: object | None, new: object | None) -> tuple[T | None, T | None]:
    """util.As: (old, new) typed as ``cls``; None stays None; another type raises TypeError."""
    typed_new = _typed(cls, new)
    return _typed(cls, old), typed_new


def present(obj: T | None, what: str) -> T:
    """The event's object a hint cannot do without (an Add's new, a Delete's old)."""
    if obj is None:
        raise TypeError(f"the event carries no {what}")
    return obj
