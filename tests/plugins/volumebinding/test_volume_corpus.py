"""The volume plugins against the conformance corpus (the volumes/volumelimits scenarios and
every scenario where a volume plugin rejected a node): every
per-node failure the real kube-scheduler v1.30.12 attributed to VolumeRestrictions, the volume
limit plugins, VolumeBinding or VolumeZone is reproduced, and no volume plugin rejects a node
kube-scheduler let through (see corpus_check.py for the replay rules)."""

from __future__ import annotations

import pytest

from .corpus_check import check_scenario, scenario_names

NAMES = scenario_names()


@pytest.mark.skipif(not NAMES, reason="conformance corpus not found")
@pytest.mark.parametrize("name", NAMES or ["none"])
def test_volume_plugins_agree_with_kube_scheduler(name: str) -> None:
    problems = check_scenario(name)
    assert not problems, "\n".join(problems[:10])
