"""Which kube-scheduler release decides, as data: versioned feature gates and version-keyed changes.

kube-scheduler's behaviour differs between releases in two ways, and both are tables here:

- **feature gates** (pkg/features/kube_features.go, ``featuregate.VersionedSpecs``): each gate has a
  list of (release, default, pre-release stage, locked) rows; at release R the last row at or
  before R gives the default. ``--feature-gates Name=true,...`` overrides a default as kube-scheduler's
  flag does (an unknown gate, or a locked one set against its value, is refused with
  kube-scheduler's words).
- **changes** that are code, not gates (a reason text rewritten, a scoring formula replaced): each
  is named, with the first release that has it. Code asks ``features.enabled(NAME)`` for both kinds,
  never ``if version == ...``.

Only 1.30 and 1.36 are decided as kube-scheduler does (their conformance corpora pass); the rows
for 1.31–1.35 are upstream's as far as they are known, so adding one of those releases is a matter
of checking its rows, not of forking code. ``SUPPORTED_VERSIONS`` lists what ``--kube-version`` takes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.errors import ConfigError

ALPHA = "ALPHA"
BETA = "BETA"
GA = "GA"
DEPRECATED = "DEPRECATED"


@dataclass(frozen=True, slots=True, order=True)
class KubeVersion:
    """A Kubernetes minor release (the patch level never changes scheduling decisions here)."""

    major: int
    minor: int

    @staticmethod
    def parse(text: str) -> KubeVersion:
        """``1.36``, ``v1.36`` or ``v1.36.2`` (as /version's gitVersion reads); anything else is a
        ConfigError."""
        m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", text.strip())
        if m is None:
            raise ConfigError(f"invalid Kubernetes version {text!r}: expected MAJOR.MINOR, e.g. 1.36")
        return KubeVersion(int(m.group(1)), int(m.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


V1_30 = KubeVersion(1, 30)
V1_36 = KubeVersion(1, 36)
SUPPORTED_VERSIONS: tuple[KubeVersion, ...] = (V1_30, V1_36)
DEFAULT_VERSION = V1_36
# The kube-scheduler release each supported minor is checked against (conformance corpora).
ORACLES: Mapping[KubeVersion, str] = {V1_30: "kube-scheduler v1.30.12", V1_36: "kube-scheduler v1.36.2"}


@dataclass(frozen=True, slots=True)
class GateRow:
    """One featuregate.FeatureSpec of a gate's VersionedSpecs: from ``since`` on."""

    since: KubeVersion
    default: bool
    stage: str
    locked: bool = False


def _rows(*rows: tuple[str, bool, str] | tuple[str, bool, str, bool]) -> tuple[GateRow, ...]:
    out = []
    for r in rows:
        out.append(GateRow(KubeVersion.parse(r[0]), r[1], r[2], bool(r[3]) if len(r) > 3 else False))
    return tuple(out)


# The gates whose value changes what kube-scheduler (or the API server in front of it) decides,
# with their VersionedSpecs from pkg/features/kube_features.go (v1.36). A gate absent from a
# release (its first row is later) is unknown to that release's --feature-gates.
GATES: Mapping[str, tuple[GateRow, ...]] = {
    # --- the scheduling queue
    "SchedulerQueueingHints": _rows(("1.28", False, BETA), ("1.32", True, BETA), ("1.34", True, GA, True)),
    "SchedulerPopFromBackoffQ": _rows(("1.33", True, BETA)),
    "SchedulerAsyncPreemption": _rows(("1.32", False, ALPHA), ("1.33", True, BETA)),
    "SchedulerAsyncAPICalls": _rows(("1.34", True, BETA), ("1.36", False, BETA)),
    "NominatedNodeNameForExpectation": _rows(("1.34", False, ALPHA), ("1.35", True, BETA)),
    "ClearingNominatedNodeNameAfterBinding": _rows(("1.34", False, ALPHA), ("1.35", True, BETA)),
    "OpportunisticBatching": _rows(("1.35", True, BETA)),
    # --- pods and nodes
    "SidecarContainers": _rows(("1.28", False, ALPHA), ("1.29", True, BETA), ("1.33", True, GA, True)),
    "PodLevelResources": _rows(("1.32", False, ALPHA), ("1.34", True, BETA)),
    "InPlacePodVerticalScaling": _rows(("1.27", False, ALPHA), ("1.33", True, BETA), ("1.35", True, GA)),
    "InPlacePodLevelResourcesVerticalScaling": _rows(("1.35", False, ALPHA), ("1.36", True, BETA)),
    "ImageVolume": _rows(("1.31", False, ALPHA), ("1.33", False, BETA), ("1.35", True, BETA), ("1.36", True, GA)),
    "NodeDeclaredFeatures": _rows(("1.35", False, ALPHA), ("1.36", True, BETA)),
    "PodSchedulingReadiness": _rows(("1.26", False, ALPHA), ("1.27", True, BETA), ("1.30", True, GA, True)),
    "PodObservedGenerationTracking": _rows(("1.33", False, ALPHA), ("1.34", True, BETA), ("1.35", True, GA)),
    # --- affinity and spreading (API server side: selector merges at pod creation)
    "MatchLabelKeysInPodAffinity": _rows(("1.29", False, ALPHA), ("1.31", True, BETA), ("1.33", True, GA)),
    "MatchLabelKeysInPodTopologySpread": _rows(("1.25", False, ALPHA), ("1.27", True, BETA)),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": _rows(("1.34", True, BETA)),
    "NodeInclusionPolicyInPodTopologySpread": _rows(("1.25", False, ALPHA), ("1.26", True, BETA),
                                                    ("1.33", True, GA)),
    "PodTopologyLabelsAdmission": _rows(("1.33", False, ALPHA), ("1.35", True, BETA)),
    "TaintTolerationComparisonOperators": _rows(("1.35", False, ALPHA)),
    # --- volumes
    "VolumeAttributesClass": _rows(("1.29", False, ALPHA), ("1.31", False, BETA), ("1.34", True, GA)),
    "VolumeCapacityPriority": _rows(("1.21", False, ALPHA)),
    "StorageCapacityScoring": _rows(("1.33", False, ALPHA)),
    # --- Dynamic Resource Allocation
    "DynamicResourceAllocation": _rows(("1.26", False, ALPHA), ("1.32", False, BETA), ("1.34", True, GA)),
    "DRAAdminAccess": _rows(("1.32", False, ALPHA), ("1.34", True, BETA), ("1.36", True, GA)),
    "DRAPrioritizedList": _rows(("1.33", False, ALPHA), ("1.34", True, BETA), ("1.36", True, GA)),
    "DRAPartitionableDevices": _rows(("1.33", False, ALPHA), ("1.36", True, BETA)),
    "DRAConsumableCapacity": _rows(("1.34", False, ALPHA), ("1.36", True, BETA)),
    "DRADeviceTaints": _rows(("1.33", False, ALPHA), ("1.36", True, BETA)),
    "DRADeviceBindingConditions": _rows(("1.34", False, ALPHA), ("1.36", True, BETA)),
    "DRAResourceClaimDeviceStatus": _rows(("1.32", False, ALPHA), ("1.33", True, BETA)),
    "DRAExtendedResource": _rows(("1.34", False, ALPHA), ("1.36", True, BETA)),
    "DRADeviceTaintRules": _rows(("1.35", False, ALPHA)),
    # --- workloads (alpha in 1.36, off)
    "GangScheduling": _rows(("1.35", False, ALPHA)),
    "GenericWorkload": _rows(("1.35", False, ALPHA)),
}

# defaultKubernetesFeatureGateDependencies (kube_features.go, added to the gate by
# AddDependencies): a gate enabled (by default or by --feature-gates) whose dependencies are not
# all enabled is refused by featuregate.SetFromMap. Only the rows between gates of ``GATES``
# whose dependency kubesched checks are listed; upstream also has e.g. DRAAdminAccess ->
# DynamicResourceAllocation, not listed (yet): see the rows' tests before adding one.
DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "GangScheduling": ("GenericWorkload",),
}

# Changes without a gate: name -> the first release known to have it (upstream file mirrored in
# the comment). Releases between 1.30 and the one given were not checked: a row may move earlier
# when one of them is added.
CHANGES: Mapping[str, KubeVersion] = {
    # tainttoleration.Filter: "node(s) had untolerated taint(s)" instead of one text per taint.
    "GenericTaintReason": V1_36,
    # balanced_allocation.go: score = 50 + (50 + with - without) / 2; PreScore skips best-effort pods.
    "BalancedAllocationDelta": V1_36,
    # schedule_one.go selectHost: container/heap over the feasible nodes, no reservoir sampling.
    "HeapSelectHost": V1_36,
    # schedule_one.go findNodesThatFitPod: nodes a PreFilterResult excluded get an absent status.
    "PreFilterAbsentNodes": V1_36,
    # noderesources/fit.go fitsRequest: a request above the node's allocatable is unresolvable.
    "UnresolvableOversize": V1_36,
    # framework/types.go: restartable init containers' ports and requests count on their node.
    "SidecarAccounting": V1_36,
    # podtopologyspread: match counts and critical paths per constraint, not per topology key.
    "PerConstraintSpreadCounts": V1_36,
    # volumebinding / volumerestrictions / nodevolumelimits: 1.36 reasons; CSI limits from
    # CSINode only, VolumeAttachments counted; the in-tree EBS/GCEPD/AzureDisk limits removed.
    "VolumeReasons136": V1_36,
    "CSILimitsFromCSINodeOnly": V1_36,
    "InTreeVolumeLimitsRemoved": KubeVersion(1, 31),
    # default_plugins.go: DynamicResources scores (weight 2) since its GA.
    "DynamicResourcesScoring": KubeVersion(1, 34),
    "DynamicResourcesArgs": KubeVersion(1, 34),
    # framework/events.go + types.go MatchClusterEvents: fine-grained pod update events
    # (PodSchedulingPropertiesChange on AssignedPod/UnschedulablePod), an incoming event must be
    # as specific as the registration, assigned-pod events also move PodTopologySpread's pods.
    "FineGrainedQueueEvents": V1_36,
    # preemption/executor.go prepareCandidate: a victim already being deleted gets no API calls
    # (and no Preempted event).
    "SkipTerminatingVictims": V1_36,
}


def row_at(rows: tuple[GateRow, ...], version: KubeVersion) -> GateRow | None:
    """The gate's spec in force at ``version`` (the last row at or before it), None before its first."""
    found = None
    for row in rows:
        if row.since <= version:
            found = row
    return found


@dataclass(frozen=True, slots=True)
class Features:
    """The gates and changes in force: one kube-scheduler release plus ``--feature-gates``."""

    version: KubeVersion = DEFAULT_VERSION
    overrides: Mapping[str, bool] = field(default_factory=dict)
    _on: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        on = {name for name, rows in GATES.items() if (row := row_at(rows, self.version)) is not None and row.default}
        for name, value in self.overrides.items():
            (on.add if value else on.discard)(name)
        on.update(name for name, since in CHANGES.items() if self.version >= since)
        object.__setattr__(self, "_on", frozenset(on))

    def enabled(self, name: str) -> bool:
        """A gate's value or whether a change is in this release. An unknown name is a bug."""
        if name not in GATES and name not in CHANGES:
            raise KeyError(f"unknown feature gate or change {name!r}")
        return name in self._on

    @property
    def oracle(self) -> str:
        """Which kube-scheduler decides (printed in headers and ``-o json``)."""
        return ORACLES.get(self.version, f"kube-scheduler v{self.version}")

    def gate_names(self) -> list[str]:
        """The gates this release knows, sorted."""
        return sorted(n for n, rows in GATES.items() if row_at(rows, self.version) is not None)

    def describe(self) -> dict[str, object]:
        """What ``-o json`` reports: the version and the gates set on the command line."""
        return {"kubeVersion": str(self.version), "featureGates": dict(sorted(self.overrides.items()))}


def parse_feature_gates(specs: Iterable[str], version: KubeVersion) -> dict[str, bool]:
    """``--feature-gates A=true,B=false`` (several flags allowed) as kube-scheduler's
    featuregate.Set reads it: unknown gates and locked gates set against their value are errors."""
    out: dict[str, bool] = {}
    for spec in specs:
        for part in spec.split(","):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep:
                raise ConfigError(f"--feature-gates: missing bool value for {key}")
            v = value.strip().lower()
            if v not in ("true", "false"):
                raise ConfigError(f"--feature-gates: invalid value of {key}={value.strip()}, err: "
                                  f"strconv.ParseBool: parsing {value.strip()!r}: invalid syntax")
            rows = GATES.get(key)
            row = row_at(rows, version) if rows is not None else None
            if row is None:
                raise ConfigError(f"--feature-gates: unrecognized feature gate: {key}")
            if row.locked and (v == "true") != row.default:
                raise ConfigError(f"--feature-gates: cannot set feature gate {key} to {v}, feature is locked to "
                                  f"{str(row.default).lower()}")
            out[key] = v == "true"
    _check_dependencies(out, version)
    return out


def _check_dependencies(overrides: Mapping[str, bool], version: KubeVersion) -> None:
    """featureGate.unsafeSetFromMap's dependency check: "X is enabled, but depends on features
    that are disabled: [Y]" (Go's %v of the []Feature), for the dependents the release knows."""
    def on(name: str) -> bool:
        if name in overrides:
            return overrides[name]
        row = row_at(GATES.get(name, ()), version)
        return row is not None and row.default

    errors = []
    for feature, deps in sorted(DEPENDENCIES.items()):
        if row_at(GATES.get(feature, ()), version) is None or not on(feature):
            continue
        disabled = [d for d in deps if not on(d)]
        if disabled:
            errors.append(f"{feature} is enabled, but depends on features that are disabled: [{' '.join(disabled)}]")
    if errors:
        raise ConfigError("--feature-gates: " + "; ".join(errors))


def features_for(kube_version: str | KubeVersion | None = None, feature_gates: Iterable[str] = ()) -> Features:
    """The Features of ``--kube-version`` (default: the newest supported release) and
    ``--feature-gates``. A release kubesched does not decide is a ConfigError listing those it does."""
    version = (kube_version if isinstance(kube_version, KubeVersion)
               else KubeVersion.parse(kube_version) if kube_version else DEFAULT_VERSION)
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise ConfigError(f"--kube-version {version}: not supported (supported: {supported})")
    return Features(version, parse_feature_gates(feature_gates, version))


DEFAULT_FEATURES = Features(DEFAULT_VERSION)
FEATURES_1_30 = Features(V1_30)
FEATURES_1_36 = Features(V1_36)
