"""deploy/: every manifest is well-formed (PyYAML structure checks, and ``kubectl apply
--dry-run=client`` when kubectl is installed), the configuration is valid, and the RBAC rules allow
every API call kubesched makes (kubesched.cluster.live.API_CALLS, the table its client enforces,
seen by RBAC through kubesched/live/api_calls.py) while granting nothing beyond kube-scheduler
v1.30's own roles plus the Lease of kubesched's lock."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster import live
from kubesched.config import parse_config
from kubesched.live.api_calls import (
    API_CALLS,
    INFORMED,
    LEASES,
    PODS,
    ApiCall,
    Grant,
    PolicyRule,
    api_calls,
    authorize,
    rbac_call,
)

from .kube_discovery import discovery_server

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

# kube-scheduler's bootstrap ClusterRoles system:kube-scheduler and system:volume-scheduler, as
# data: plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (ClusterRoles(), as rendered in
# bootstrappolicy/testdata/cluster-roles.yaml): v1.30's rules, plus the resource.k8s.io rules
# v1.36 adds with its default gates (DynamicResourceAllocation, DRAExtendedResource,
# DRAResourceClaimGranularStatusAuthorization on; DRADeviceTaintRules, GenericWorkload off).
# tests/test_security_defaults.py checks deploy/'s effective grants against them too.
SYSTEM_KUBE_SCHEDULER = yaml.safe_load("""
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch, update]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
- apiGroups: [coordination.k8s.io]
  resourceNames: [kube-scheduler]
  resources: [leases]
  verbs: [get, update]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [delete, get, list, watch]
- apiGroups: [""]
  resources: [bindings, pods/binding]
  verbs: [create]
- apiGroups: [""]
  resources: [pods/status]
  verbs: [patch, update]
- apiGroups: [""]
  resources: [replicationcontrollers, services]
  verbs: [get, list, watch]
- apiGroups: [apps, extensions]
  resources: [replicasets]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, list, watch]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumeclaims, persistentvolumes]
  verbs: [get, list, watch]
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
- apiGroups: [storage.k8s.io]
  resources: [csinodes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
- apiGroups: [storage.k8s.io]
  resources: [csidrivers]
  verbs: [get, list, watch]
- apiGroups: [storage.k8s.io]
  resources: [csistoragecapacities]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  resources: [deviceclasses]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims]
  verbs: [get, list, watch, update, patch]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims/status]
  verbs: [get, list, watch, update, patch]
- apiGroups: [""]
  resources: [pods/finalizers]
  verbs: [update]
- apiGroups: [resource.k8s.io]
  resources: [resourceslices]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims]
  verbs: [create, delete]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims/binding]
  verbs: [update, patch]
""")
SYSTEM_VOLUME_SCHEDULER = yaml.safe_load("""
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, patch, update, watch]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, patch, update, watch]
""")
BUILTIN_CLUSTER_ROLES = {"system:volume-scheduler": SYSTEM_VOLUME_SCHEDULER}

NAMESPACED_KINDS = {"ServiceAccount", "ConfigMap", "Deployment", "Role", "RoleBinding"}
API_VERSIONS = {
    "ServiceAccount": "v1", "ConfigMap": "v1", "Deployment": "apps/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
}


# `kubesched shadow`'s read-only RBAC, applied on its own (tests/live/test_shadow_rbac.py).
SHADOW_RBAC = DEPLOY / "shadow-rbac.yaml"


def manifests(paths: list[Path] | None = None) -> list[dict[str, Any]]:
    """The documents of `kubesched run`'s manifests (deploy/*.yaml but the shadow's RBAC), or of ``paths``."""
    docs: list[dict[str, Any]] = []
    for path in paths if paths is not None else [p for p in sorted(DEPLOY.glob("*.yaml")) if p != SHADOW_RBAC]:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                assert isinstance(doc, dict), f"{path.name}: a document is not a mapping"
                docs.append(doc)
    return docs


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in manifests() if d["kind"] == kind]


def one(kind: str, name: str) -> dict[str, Any]:
    found = [d for d in by_kind(kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}"
    return found[0]


def scheduler_config() -> Any:
    return parse_config(yaml.safe_load(one("ConfigMap", "kubesched-config")["data"]["config.yaml"]))


# -------------------------------------------------------------------- structure
def test_every_manifest_has_a_known_kind_api_version_and_name() -> None:
    docs = manifests()
    assert sorted(d["kind"] for d in docs) == sorted([
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Role", "RoleBinding",
        "ConfigMap", "Deployment"])
    for d in docs:
        assert d["apiVersion"] == API_VERSIONS[d["kind"]], d["kind"]
        meta = d["metadata"]
        assert meta["name"]
        if d["kind"] in NAMESPACED_KINDS:
            assert meta["namespace"] == "kube-system", f"{d['kind']} {meta['name']}"
        else:
            assert "namespace" not in meta
        assert meta["labels"]["app.kubernetes.io/name"] == "kubesched"


def test_bindings_point_at_existing_roles_and_the_service_account() -> None:
    one("ServiceAccount", "kubesched")
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        for binding in by_kind(kind):
            ref = binding["roleRef"]
            assert ref["apiGroup"] == "rbac.authorization.k8s.io" and ref["kind"] == role_kind
            if ref["name"] not in BUILTIN_CLUSTER_ROLES:
                role = one(role_kind, ref["name"])
                if role_kind == "Role":
                    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"]
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kubesched", "namespace": "kube-system"}]
    assert {b["roleRef"]["name"] for b in by_kind("ClusterRoleBinding")} == {"kubesched", "system:volume-scheduler"}


def test_the_configuration_has_one_kubesched_profile_and_its_own_lock() -> None:
    cfg = scheduler_config()
    assert [p.scheduler_name for p in cfg.profiles] == ["kubesched"]
    le = cfg.leader_election
    assert (le.leader_elect, le.resource_lock, le.resource_namespace, le.resource_name) == (
        True, "leases", "kube-system", "kubesched")
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (15.0, 10.0, 2.0)
    lease_rules = one("Role", "kubesched-leader-election")["rules"]
    assert [r.get("resourceNames") for r in lease_rules] == [None, ["kubesched"]]


def test_the_deployment_runs_two_electing_replicas_with_probes_and_a_locked_down_container() -> None:
    dep = one("Deployment", "kubesched")
    spec = dep["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    pspec = pod["spec"]
    assert pspec["serviceAccountName"] == "kubesched"
    assert pspec["securityContext"]["runAsNonRoot"] is True and pspec["securityContext"]["runAsUser"] != 0
    (c,) = pspec["containers"]
    assert c["image"] and c["name"] == "kubesched"
    args = c["args"]
    assert "--config=/etc/kubesched/config.yaml" in args
    assert "--bind-address=0.0.0.0" in args, "the kubelet probes the pod IP, not loopback"
    port = next(int(a.split("=", 1)[1]) for a in args if a.startswith("--secure-port="))
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port, "scheme": "HTTP"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port, "scheme": "HTTP"}
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert [p["containerPort"] for p in c["ports"]] == [port]
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    assert c["resources"]["limits"]["memory"]
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["runAsNonRoot"] is True and sc["capabilities"]["drop"] == ["ALL"]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pspec["volumes"]}
    assert mounts == {"config": "/etc/kubesched", "tmp": "/tmp"} and set(volumes) == set(mounts)
    assert volumes["config"]["configMap"]["name"] == "kubesched-config"
    assert "config.yaml" in one("ConfigMap", "kubesched-config")["data"]


def test_the_containerfile_installs_kubesched_and_runs_it() -> None:
    lines = [ln.strip() for ln in (DEPLOY / "Containerfile").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    assert any(ln.startswith("RUN pip install .") for ln in lines)
    assert lines[-1] == 'ENTRYPOINT ["kubesched", "run"]'
    user = next(ln for ln in lines if ln.startswith("USER "))
    assert not user.split()[1].startswith("0")
    deployment_user = one("Deployment", "kubesched")["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert user == f"USER {deployment_user}:{deployment_user}"


def test_kubectl_apply_dry_run_accepts_every_manifest(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed; the manifests are still checked structurally by the other tests here")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "no-kubeconfig"))
    # Client-side dry-run still asks the server for discovery (kind -> resource, scope) and for each
    # object (to choose create vs patch); the stub answers those. --validate=false: schema
    # validation needs the cluster's OpenAPI documents, which the stub does not have.
    with discovery_server() as server:
        port = server.server_address[1]
        result = subprocess.run(
            [kubectl, f"--server=http://127.0.0.1:{port}", f"--cache-dir={tmp_path / 'cache'}", "apply",
             "--dry-run=client", "--validate=false", "-f", str(DEPLOY)],
            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    created = sorted(line for line in result.stdout.splitlines() if line.endswith("created (dry run)"))
    assert len(created) == len(manifests()) + len(manifests([SHADOW_RBAC])), result.stdout
    assert not [m for m, _ in server.requests if m != "GET"], "a client dry-run must not write"


# ------------------------------------------------------------------------- RBAC
def deploy_grants() -> list[Grant]:
    """What the ServiceAccount holds through the bindings in deploy/."""
    grants: list[Grant] = []
    for binding in by_kind("ClusterRoleBinding"):
        name = binding["roleRef"]["name"]
        rules = BUILTIN_CLUSTER_ROLES.get(name) or one("ClusterRole", name)["rules"]
        grants.append(Grant.of(rules))
    for binding in by_kind("RoleBinding"):
        ns = binding["metadata"]["namespace"]
        grants.append(Grant.of(one("Role", binding["roleRef"]["name"])["rules"], ns))
    return grants


def kubesched_calls() -> tuple[ApiCall, ...]:
    le = scheduler_config().leader_election
    return api_calls(le.resource_namespace, le.resource_name)


@pytest.mark.parametrize("call", kubesched_calls(), ids=str)
def test_every_api_call_kubesched_makes_is_allowed(call: ApiCall) -> None:
    assert authorize(deploy_grants(), call), f"deploy/ does not allow: {call}"


@pytest.mark.parametrize("call", live.API_CALLS, ids=str)
def test_every_call_the_client_enforces_is_allowed_on_the_configured_lock(call: live.ApiCall) -> None:
    """The client's own table (what ApiClient lets through at runtime), call by call."""
    le = scheduler_config().leader_election
    assert authorize(deploy_grants(), rbac_call(call, le.resource_namespace, le.resource_name)), \
        f"deploy/ does not allow {call} (made by kubesched.cluster.live)"


def test_the_rbac_table_is_the_client_table() -> None:
    """One source of truth: kubesched.live.api_calls is kubesched.cluster.live.API_CALLS, call
    for call (the Lease calls pinned to the lock; none without leader election)."""
    def key(c: ApiCall) -> tuple[str, str, str, str]:
        return (c.verb, c.group, c.resource.plural, c.subresource)

    client = [(c.verb, c.group, c.resource, c.subresource) for c in live.API_CALLS]
    assert [key(c) for c in kubesched_calls()] == client
    assert [key(c) for c in api_calls(leader_elect=False)] == [c for c in client if c[2] != "leases"]
    le = scheduler_config().leader_election
    assert {(c.namespace, c.name) for c in kubesched_calls() if c.resource == LEASES} == {
        (le.resource_namespace, le.resource_name)}
    assert all(c.why for c in API_CALLS), [str(c) for c in API_CALLS if not c.why]


def test_calls_the_manifests_do_not_need_are_refused() -> None:
    grants = deploy_grants()
    denied = [
        ApiCall("create", PODS, why="creating pods"),
        ApiCall("update", PODS, why="updating pod specs"),
        ApiCall("list", LEASES, why="listing leases cluster-wide"),
        ApiCall("update", LEASES, namespace="kube-system", name="kube-scheduler", why="kube-scheduler's own lock"),
        ApiCall("update", LEASES, namespace="default", name="kubesched", why="a lock elsewhere"),
        ApiCall("get", LEASES, namespace="kube-system", name="kube-controller-manager"),
        ApiCall("create", PODS, "eviction"),
    ]
    for call in denied:
        assert not authorize(grants, call), f"unexpectedly allowed: {call}"


def _atoms(rule: PolicyRule) -> list[tuple[str, str, str, str | None]]:
    names: list[str | None] = [*sorted(rule.resource_names)] or [None]
    return [(v, g, r, n) for v in sorted(rule.verbs) for g in sorted(rule.api_groups) for r in sorted(rule.resources)
            for n in names]


def _covered(atom: tuple[str, str, str, str | None], reference: list[PolicyRule]) -> bool:
    verb, group, resource, name = atom
    for ref in reference:
        if name is None and ref.resource_names:
            continue  # an unrestricted grant needs an unrestricted reference rule
        if ref.allows(verb, group, resource, name):
            return True
    return False


def test_no_rule_grants_more_than_kube_scheduler_plus_the_lease_of_the_lock() -> None:
    cluster_reference = [PolicyRule.from_manifest(r) for r in SYSTEM_KUBE_SCHEDULER + SYSTEM_VOLUME_SCHEDULER]
    le = scheduler_config().leader_election
    lease_rules = [
        PolicyRule(frozenset({"create"}), frozenset({"coordination.k8s.io"}), frozenset({"leases"})),
        PolicyRule(frozenset({"get", "update"}), frozenset({"coordination.k8s.io"}), frozenset({"leases"}),
                   frozenset({le.resource_name})),
    ]
    for role in by_kind("ClusterRole"):
        for raw in role["rules"]:
            rule = PolicyRule.from_manifest(raw)
            assert "*" not in rule.verbs | rule.api_groups | rule.resources, raw
            extra = [a for a in _atoms(rule) if not _covered(a, cluster_reference)]
            assert not extra, f"ClusterRole {role['metadata']['name']} grants beyond system:kube-scheduler: {extra}"
            lease = [a for a in _atoms(rule) if a[2] == "leases"]
            assert not lease, "Lease access belongs to the namespaced Role only"
    for role in by_kind("Role"):
        assert role["metadata"]["namespace"] == le.resource_namespace
        for raw in role["rules"]:
            extra = [a for a in _atoms(PolicyRule.from_manifest(raw)) if not _covered(a, lease_rules)]
            assert not extra, f"Role {role['metadata']['name']} grants beyond the lock's Lease: {extra}"


# --------------------------------------------------------------- the call table
def test_the_call_table_lists_and_watches_every_informed_resource_cluster_wide() -> None:
    for r in INFORMED:
        for verb in ("list", "watch"):
            assert ApiCall(verb, r, why="reflector: initial list / relist" if verb == "list" else "reflector: watch") \
                in API_CALLS
    assert {(c.verb, c.rbac_resource, c.group) for c in API_CALLS if c.verb not in ("list", "watch")} == {
        ("create", "pods/binding", ""), ("patch", "pods/status", ""), ("delete", "pods", ""),
        ("create", "events", "events.k8s.io"), ("patch", "events", "events.k8s.io"),  # series
        ("update", "persistentvolumes", ""), ("update", "persistentvolumeclaims", ""),  # VolumeBinding PreBind
        # DynamicResources: bindClaim, PostFilter, Unreserve
        ("get", "resourceclaims", "resource.k8s.io"), ("update", "resourceclaims", "resource.k8s.io"),
        ("update", "resourceclaims/status", "resource.k8s.io"), ("patch", "resourceclaims/status", "resource.k8s.io"),
        ("get", "leases", "coordination.k8s.io"), ("create", "leases", "coordination.k8s.io"),
        ("update", "leases", "coordination.k8s.io"),
    }
    assert not [c for c in api_calls(leader_elect=False) if c.resource == LEASES]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (PODS.path(), "/api/v1/pods"),
        (PODS.path("default", "web-0", "binding"), "/api/v1/namespaces/default/pods/web-0/binding"),
        (LEASES.path("kube-system", "kubesched"), "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubesched"),
        (next(r for r in INFORMED if r.plural == "csinodes").path(), "/apis/storage.k8s.io/v1/csinodes"),
        (next(r for r in INFORMED if r.plural == "poddisruptionbudgets").path(), "/apis/policy/v1/poddisruptionbudgets"),
    ],
    ids=["pods of all namespaces", "a pod's binding subresource", "the lock", "a cluster-scoped resource",
         "a policy/v1 resource"],
)
def test_resource_paths(path: str, expected: str) -> None:
    assert path == expected


def test_rbac_matching_follows_the_authorizer() -> None:
    rule = PolicyRule.from_manifest({"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]})
    assert rule.allows("get", "", "pods/status", None) and not rule.allows("get", "", "pods", None)
    named = PolicyRule.from_manifest({"apiGroups": ["x"], "resources": ["leases"], "verbs": ["get"],
                                      "resourceNames": ["a"]})
    assert named.allows("get", "x", "leases", "a") and not named.allows("get", "x", "leases", None)
    with pytest.raises(ValueError):
        PolicyRule.from_manifest({"nonResourceURLs": ["/metrics"], "verbs": ["get"]})


def run_flags() -> dict[str, str]:
    """Every option of ``kubesched run --help`` (long and short spellings) -> its default as the
    help shows it ("" when none is shown)."""
    import re

    import click

    from kubesched.cli import main

    command = main.commands["run"]
    flags: dict[str, str] = {}
    with click.Context(command) as ctx:
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = re.search(r"\[default: ([^;\]]+)", record[1])
            for name in (*param.opts, *param.secondary_opts):
                flags[name] = default.group(1).strip() if default else ""
    return flags


def test_the_guide_names_only_files_and_flags_that_exist() -> None:
    import re

    guide = (ROOT / "docs" / "second-scheduler.md").read_text()
    for name in set(re.findall(r"deploy/([\w.-]+)", guide)):
        assert (DEPLOY / name).is_file(), name
    flags = run_flags()
    for flag in set(re.findall(r"`(--?[a-z][a-z0-9-]*)", guide)):
        assert flag in flags, f"the guide documents {flag}, which `kubesched run` does not define"


def test_the_guide_documents_every_flag_of_kubesched_run_with_its_default() -> None:
    import re

    from click.testing import CliRunner

    from kubesched.cli import main

    guide = (ROOT / "docs" / "second-scheduler.md").read_text()
    help_text = CliRunner().invoke(main, ["run", "--help"], prog_name="kubesched").output
    assert "Usage: kubesched run" in help_text
    rows = [line for line in guide.splitlines() if line.startswith("| `-")]
    documented: dict[str, str] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        names = re.findall(r"`(--?[a-z][a-z0-9-]*)", cells[0])
        defaults = re.findall(r"`([^`]*)`", cells[1]) or [""]
        for i, name in enumerate(names):
            documented[name] = defaults[min(i, len(defaults) - 1)] if len(defaults) == len(names) else defaults[0]
    flags = run_flags()
    assert set(documented) == set(flags) - {"-h", "--help"}, "the guide's flag tables and `kubesched run --help` differ"
    assert all(re.search(rf"(^|[\s,]){re.escape(name)}[\s,=]", help_text, re.M) for name in documented)
    for name, default in flags.items():
        if default and name in documented:
            assert documented[name] == default, f"{name}: the guide says {documented[name]!r}, --help {default!r}"
