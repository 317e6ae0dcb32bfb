"""Which Kubernetes kinds the loader reads, and which it knowingly skips.

A real ``kubectl get all -A -o yaml`` dump, or an application's manifests, carry kinds that
exist in every cluster but never change a scheduling decision (ConfigMaps, RBAC, Events, ...).
They are skipped and reported. Anything else that is not read (a typo, a custom resource)
stays an error unless the caller asks to ignore unknown kinds too.

Kinds are matched by API group and kind, whatever the version: ``v1`` Events and
``events.k8s.io/v1`` Events are both skipped, a ``ConfigMap`` of ``example.com/v1`` is not.
"""

from __future__ import annotations

# (API group, kind) of the kinds that exist in a cluster but play no part in scheduling.
# Not listed on purpose, because they can change where a pod goes: RuntimeClass (pod
# overhead, node selector and tolerations by admission), CSIStorageCapacity (storage
# capacity tracking), ResourceClaim and other resource.k8s.io kinds (dynamic resources).
IGNORED_KINDS: frozenset[tuple[str, str]] = frozenset({
    # core
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "ServiceAccount"),
    ("", "Endpoints"),
    ("", "Event"),
    ("", "LimitRange"),
    ("", "ResourceQuota"),
    ("", "PodTemplate"),
    ("", "ComponentStatus"),
    # RBAC
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    # networking and discovery
    ("discovery.k8s.io", "EndpointSlice"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("extensions", "Ingress"),
    ("extensions", "NetworkPolicy"),
    # events
    ("events.k8s.io", "Event"),
    # autoscaling: the HPA changes replicas over time, not the pods of this simulation
    ("autoscaling", "HorizontalPodAutoscaler"),
    # API machinery and admission
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("coordination.k8s.io", "Lease"),
    ("policy", "PodSecurityPolicy"),
    # workload bookkeeping: revisions, and CronJobs (their Jobs only exist at the next schedule)
    ("apps", "ControllerRevision"),
    ("batch", "CronJob"),
    # storage attach/detach bookkeeping
    ("storage.k8s.io", "VolumeAttachment"),
})


def api_group(api_version: object) -> str | None:
    """The group of an apiVersion ("v1" -> "", "apps/v1" -> "apps"); None if malformed."""
    if not isinstance(api_version, str) or not api_version:
        return None
    parts = api_version.split("/")
    if len(parts) == 1:
        return ""
    if len(parts) == 2 and parts[0] and parts[1]:
        return parts[0]
    return None


def is_ignored_kind(api_version: object, kind: str) -> bool:
    group = api_group(api_version)
    return group is not None and (group, kind) in IGNORED_KINDS
