"""deploy/snapshot/rbac.yaml grants a snapshot exactly what it reads: get/list/watch on every
resource kubesched.cluster.snapshot lists, no other verb, no other resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cluster.resources import RESOURCES
from kubesched.cluster.snapshot import ALL_SNAPSHOT_RESOURCES, CLUSTER_ROLE, RBAC_FILE, READ_VERBS, SNAPSHOT_CALLS

ROOT = Path(__file__).resolve().parents[2]


def _documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / RBAC_FILE).read_text()) if d is not None]


def _one(kind: str) -> dict[str, Any]:
    found = [d for d in _documents() if d["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def _grants() -> set[tuple[str, str, str]]:
    """(verb, group, resource) the ClusterRole grants."""
    return {(v, g, r) for rule in _one("ClusterRole")["rules"] for v in rule["verbs"] for g in rule["apiGroups"]
            for r in rule["resources"]}


@pytest.mark.parametrize("plural", ALL_SNAPSHOT_RESOURCES)
def test_every_resource_the_snapshot_lists_is_readable(plural: str) -> None:
    group = RESOURCES[plural].group
    assert {(v, group, plural) for v in READ_VERBS} <= _grants()


def test_every_call_the_snapshot_client_may_make_is_granted() -> None:
    assert {(c.verb, c.group, c.resource) for c in SNAPSHOT_CALLS} <= _grants()
    assert {c.verb for c in SNAPSHOT_CALLS} == {"list"}


def test_the_role_grants_read_verbs_only_and_no_other_resource() -> None:
    grants = _grants()
    assert {v for v, _, _ in grants} == set(READ_VERBS)
    assert {(g, r) for _, g, r in grants} == {(RESOURCES[p].group, p) for p in ALL_SNAPSHOT_RESOURCES}
    for rule in _one("ClusterRole")["rules"]:
        assert "*" not in {*rule["verbs"], *rule["apiGroups"], *rule["resources"]}
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule


def test_the_binding_gives_the_role_to_the_service_account() -> None:
    role, sa, binding = _one("ClusterRole"), _one("ServiceAccount"), _one("ClusterRoleBinding")
    assert role["metadata"]["name"] == CLUSTER_ROLE
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": CLUSTER_ROLE}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": sa["metadata"]["namespace"]}]
