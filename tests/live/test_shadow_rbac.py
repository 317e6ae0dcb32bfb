"""deploy/shadow-rbac.yaml: `kubesched shadow`'s ServiceAccount may make every call the shadow
makes (list and watch of every informed resource) and holds no verb but get, list and watch."""

from __future__ import annotations

import pytest

from kubesched.cluster import live
from kubesched.cluster.resources import RESOURCES
from kubesched.live.api_calls import ApiCall, Grant, PolicyRule, authorize
from kubesched.live.shadow import READ_VERBS, SHADOW_API_CALLS

from .test_deploy import API_VERSIONS, SHADOW_RBAC, manifests

DOCS = manifests([SHADOW_RBAC])


def one(kind: str) -> dict[str, object]:
    (doc,) = [d for d in DOCS if d["kind"] == kind]
    return doc


def grants() -> list[Grant]:
    role = one("ClusterRole")
    binding = one("ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}  # type: ignore[index]
    return [Grant.of(role["rules"])]  # type: ignore[arg-type]


def test_the_file_holds_a_service_account_its_cluster_role_and_the_binding_between_them() -> None:
    assert sorted(d["kind"] for d in DOCS) == ["ClusterRole", "ClusterRoleBinding", "ServiceAccount"]
    for d in DOCS:
        assert d["apiVersion"] == API_VERSIONS[d["kind"]]
        assert d["metadata"]["labels"] == {"app.kubernetes.io/name": "kubesched",
                                           "app.kubernetes.io/component": "shadow"}
    sa = one("ServiceAccount")["metadata"]
    assert one("ClusterRoleBinding")["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]  # type: ignore[index]


@pytest.mark.parametrize("call", SHADOW_API_CALLS, ids=str)
def test_every_call_the_shadow_makes_is_allowed(call: live.ApiCall) -> None:
    rbac = ApiCall(call.verb, RESOURCES[call.resource], call.subresource)
    assert authorize(grants(), rbac), f"deploy/shadow-rbac.yaml does not allow {rbac}"


def test_the_shadow_calls_are_the_informers_list_and_watch() -> None:
    informed = (*live.INFORMED_RESOURCES, *live.DRA_INFORMED_RESOURCES)
    assert sorted((c.verb, c.resource) for c in SHADOW_API_CALLS) == sorted(
        (verb, plural) for plural in informed for verb in ("list", "watch"))


def test_the_role_grants_reading_only_and_no_wildcard() -> None:
    for raw in one("ClusterRole")["rules"]:  # type: ignore[attr-defined]
        rule = PolicyRule.from_manifest(raw)
        assert rule.verbs <= READ_VERBS, raw
        assert "*" not in rule.api_groups | rule.resources and not rule.resource_names, raw
        assert not any("/" in r for r in rule.resources), f"no subresource is read: {raw}"
    for verb in ("create", "update", "patch", "delete"):
        for call in SHADOW_API_CALLS:
            assert not authorize(grants(), ApiCall(verb, RESOURCES[call.resource])), (verb, call.resource)
    assert not authorize(grants(), ApiCall("create", RESOURCES["pods"], "binding"))
    assert not authorize(grants(), ApiCall("get", RESOURCES["leases"], namespace="kube-system", name="kubesched"))
