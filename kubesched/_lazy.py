"""Modules imported on first use, for what ``kubesched run`` needs only on some paths.

A restarted ``kubesched run`` binds its first pod after its imports, the informers' first LIST
and one scheduling cycle; every module imported on the way counts (kube-scheduler binds again a
few tens of milliseconds after its process starts). :func:`lazy_module` stands in for a module
that only some paths use -- httpx (the API client's own transport carries every request unless
a proxy is configured), yaml (only a kubeconfig or a configuration file needs it) -- and
imports it when one of its attributes is first read. Type checkers see the real module::

    if TYPE_CHECKING:
        import httpx
    else:
        httpx = lazy_module("httpx")

The stand-in is not put in ``sys.modules``: ``import httpx`` elsewhere imports the real module
as usual, and the stand-in then reads its attributes from it.
"""

from __future__ import annotations

import importlib
import types
from typing import Any


class _LazyModule(types.ModuleType):
    """A module whose attributes are those of module ``__name__``, imported on first read."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):  # introspection (__path__, __file__...): not a use
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self.__name__), attr)
        self.__dict__[attr] = value  # later reads are plain attribute reads
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self.__name__!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it when an attribute is first read (the
    import lock makes that safe from any thread)."""
    return _LazyModule(name)
