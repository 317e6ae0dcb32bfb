"""The public conformance corpus (../shared/conformance): one test per scenario.

Each scenario is simulated in-process exactly as `kubesched simulate SCENARIO --deterministic
--trace OUT` does, and compared with the real kube-scheduler v1.30.12's trace using the
corpus' own checker, every field. Every public scenario is expected to pass: none is xfail.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.objects import load_manifests
from kubesched.simulation import Simulator

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "conformance"

def _checker() -> Any:
    spec = importlib.util.spec_from_file_location("conformance_check", CORPUS / "check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scenarios() -> list[Any]:
    if not (CORPUS / "features.json").exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"conformance corpus not found at {CORPUS}"))]
    features = json.loads((CORPUS / "features.json").read_text())
    return [pytest.param(name, id=name) for name in sorted(features)]


@pytest.mark.parametrize("name", _scenarios())
def test_scenario_matches_kube_scheduler(name: str) -> None:
    check = _checker()
    objs = load_manifests([CORPUS / "scenarios" / f"{name}.yaml"])
    trace = Simulator(objs, deterministic=True).run().trace()
    # The trace must survive JSON, as the CLI writes it.
    trace = json.loads(json.dumps(trace))
    expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text())
    diff = check.compare(expected, trace, check.FIELDS)
    assert diff is None, f"{diff[0]}: {diff[1]}"
