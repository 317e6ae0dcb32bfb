"""Where the shared conformance corpora live, and their checker (``check.py``), for the tests
that hold kubesched to the real kube-scheduler's traces."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "conformance"


def conformance_checker() -> Any:
    """The corpus's own checker module (compare(expected, trace, FIELDS) -> None or a diff)."""
    spec = importlib.util.spec_from_file_location("conformance_check", CORPUS / "check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
