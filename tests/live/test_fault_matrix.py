"""The live fault matrix (tests/live/fault_matrix.py): each fault injected into a run of
kubesched against the local API server while pods are being scheduled; every pod bound exactly
once, none lost, and the case's own expectations (watch gap, retries, events, leadership).
scripts/live_fault_matrix.py runs the same cases and prints the README's table."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fault_matrix import CASES, Case, run_case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault(case: Case, tmp_path: Path) -> None:
    outcome = run_case(case, tmp_path)
    assert outcome.ok, f"{case.fault}: {outcome.problems}\n{outcome.kubesched}"
    assert (outcome.lost, outcome.double) == (0, 0)
