"""kubesched.features: releases and gates as data (pkg/features' VersionedSpecs), and
--feature-gates as kube-scheduler parses it."""

from __future__ import annotations

import re

import pytest

from kubesched.errors import ConfigError
from kubesched.features import CHANGES, GATES, KubeVersion, features_for


@pytest.mark.parametrize(("text", "want"), [
    pytest.param("1.36", KubeVersion(1, 36), id="major.minor"),
    pytest.param("v1.30.12", KubeVersion(1, 30), id="a gitVersion with patch level"),
    pytest.param("v1.36.2+k3s1", KubeVersion(1, 36), id="a distribution's build suffix"),
])
def test_a_version_is_read_as_its_minor_release(text: str, want: KubeVersion) -> None:
    assert KubeVersion.parse(text) == want


@pytest.mark.parametrize(("version", "gate", "on"), [
    pytest.param("1.30", "SchedulerQueueingHints", False, id="queueing hints were beta and off in 1.30"),
    pytest.param("1.36", "SchedulerQueueingHints", True, id="queueing hints are GA in 1.36"),
    pytest.param("1.30", "DynamicResourceAllocation", False, id="DRA was alpha in 1.30"),
    pytest.param("1.36", "DynamicResourceAllocation", True, id="DRA is GA in 1.36"),
    pytest.param("1.36", "GangScheduling", False, id="gang scheduling is alpha in 1.36"),
    pytest.param("1.36", "SchedulerAsyncAPICalls", False, id="a beta gate turned off again in 1.36"),
    pytest.param("1.30", "GenericTaintReason", False, id="a code change is absent before its release"),
    pytest.param("1.36", "GenericTaintReason", True, id="a code change is present from its release"),
])
def test_a_gate_takes_the_default_of_the_release(version: str, gate: str, on: bool) -> None:
    assert features_for(version).enabled(gate) is on


def test_feature_gates_override_the_release_defaults() -> None:
    f = features_for("1.36", ["GenericWorkload=true,GangScheduling=true,DRAPartitionableDevices=false"])
    assert f.enabled("GangScheduling") and not f.enabled("DRAPartitionableDevices")
    assert f.describe() == {"kubeVersion": "1.36", "featureGates": {"DRAPartitionableDevices": False,
                                                                   "GangScheduling": True,
                                                                   "GenericWorkload": True}}


@pytest.mark.parametrize(("version", "gates", "message"), [
    pytest.param("1.36", ["NoSuchGate=true"], "unrecognized feature gate: NoSuchGate", id="an unknown gate"),
    pytest.param("1.30", ["GangScheduling=true"], "unrecognized feature gate: GangScheduling",
                 id="a gate the release does not know yet"),
    pytest.param("1.36", ["SchedulerQueueingHints=false"],
                 "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
                 id="a GA gate locked to its value"),
    pytest.param("1.36", ["GangScheduling=true"],
                 "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
                 id="a gate enabled without the gate it depends on"),
    pytest.param("1.36", ["GenericWorkload=true,GangScheduling=true", "GenericWorkload=false"],
                 "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
                 id="a later flag turning the dependency off again"),
    pytest.param("1.36", ["GangScheduling"], "missing bool value for GangScheduling", id="a gate without a value"),
    pytest.param("1.36", ["GangScheduling=yes"], "invalid value of GangScheduling=yes", id="a value that is no bool"),
    pytest.param("1.29", [], "--kube-version 1.29: not supported (supported: 1.30, 1.36)",
                 id="a release kubesched does not decide"),
])
def test_bad_versions_and_gates_are_config_errors(version: str, gates: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        features_for(version, gates)


def test_every_release_row_of_a_gate_is_in_order() -> None:
    for name, rows in GATES.items():
        assert [r.since for r in rows] == sorted(r.since for r in rows), name
    assert all(v >= KubeVersion(1, 31) for v in CHANGES.values())
