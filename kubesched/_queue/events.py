"""Cluster events that move pods between the queue's sub-queues
(pkg/scheduler/internal/queue/events.go, v1.30), the node-update event split
(events.go: NodeSchedulingPropertiesChange), and the registration map built from the
plugins' EventsToRegister (scheduler.go: buildQueueingHintMap;
framework/runtime/framework.go: fillEnqueueExtensions, defaultEnqueueExtension).

The ``label`` of each event is the ``event`` label of scheduler_queue_incoming_pods_total.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from kubesched.framework import GVK, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHintFn, implements
from kubesched.objects import Node, Pod

# ---------------------------------------------------------------- queue-internal event labels
POD_ADD = "PodAdd"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE = "ForceActivate"
POD_UPDATE = "PodUpdate"

# ---------------------------------------------------------------- cluster events
_A = ActionType
ASSIGNED_POD_ADD = ClusterEvent(GVK.POD, _A.ADD, "AssignedPodAdd")
NODE_ADD = ClusterEvent(GVK.NODE, _A.ADD, "NodeAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(GVK.POD, _A.UPDATE, "AssignedPodUpdate")
# Upstream's label really is "UnschedulablePodUpdate" (only used with queueing hints on).
UNSCHEDULED_POD_UPDATE = ClusterEvent(GVK.POD, _A.UPDATE, "UnschedulablePodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(GVK.POD, _A.DELETE, "AssignedPodDelete")
NODE_SPEC_UNSCHEDULABLE_CHANGE = ClusterEvent(GVK.NODE, _A.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange")
NODE_ALLOCATABLE_CHANGE = ClusterEvent(GVK.NODE, _A.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange")
NODE_LABEL_CHANGE = ClusterEvent(GVK.NODE, _A.UPDATE_NODE_LABEL, "NodeLabelChange")
NODE_ANNOTATION_CHANGE = ClusterEvent(GVK.NODE, _A.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange")
NODE_TAINT_CHANGE = ClusterEvent(GVK.NODE, _A.UPDATE_NODE_TAINT, "NodeTaintChange")
NODE_CONDITION_CHANGE = ClusterEvent(GVK.NODE, _A.UPDATE_NODE_CONDITION, "NodeConditionChange")
PV_ADD = ClusterEvent(GVK.PERSISTENT_VOLUME, _A.ADD, "PvAdd")
PV_UPDATE = ClusterEvent(GVK.PERSISTENT_VOLUME, _A.UPDATE, "PvUpdate")
PVC_ADD = ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, _A.ADD, "PvcAdd")
PVC_UPDATE = ClusterEvent(GVK.PERSISTENT_VOLUME_CLAIM, _A.UPDATE, "PvcUpdate")
STORAGE_CLASS_ADD = ClusterEvent(GVK.STORAGE_CLASS, _A.ADD, "StorageClassAdd")
STORAGE_CLASS_UPDATE = ClusterEvent(GVK.STORAGE_CLASS, _A.UPDATE, "StorageClassUpdate")
CSI_NODE_ADD = ClusterEvent(GVK.CSI_NODE, _A.ADD, "CSINodeAdd")
CSI_NODE_UPDATE = ClusterEvent(GVK.CSI_NODE, _A.UPDATE, "CSINodeUpdate")
CSI_DRIVER_ADD = ClusterEvent(GVK.CSI_DRIVER, _A.ADD, "CSIDriverAdd")
CSI_DRIVER_UPDATE = ClusterEvent(GVK.CSI_DRIVER, _A.UPDATE, "CSIDriverUpdate")
CSI_STORAGE_CAPACITY_ADD = ClusterEvent(GVK.CSI_STORAGE_CAPACITY, _A.ADD, "CSIStorageCapacityAdd")
CSI_STORAGE_CAPACITY_UPDATE = ClusterEvent(GVK.CSI_STORAGE_CAPACITY, _A.UPDATE, "CSIStorageCapacityUpdate")
WILDCARD_EVENT = ClusterEvent(GVK.WILDCARD, _A.ALL, "WildCardEvent")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(GVK.WILDCARD, _A.ALL, "UnschedulableTimeout")

CLUSTER_EVENTS: dict[str, ClusterEvent] = {e.label: e for e in (
    ASSIGNED_POD_ADD, NODE_ADD, ASSIGNED_POD_UPDATE, UNSCHEDULED_POD_UPDATE, ASSIGNED_POD_DELETE,
    NODE_SPEC_UNSCHEDULABLE_CHANGE, NODE_ALLOCATABLE_CHANGE, NODE_LABEL_CHANGE, NODE_ANNOTATION_CHANGE,
    NODE_TAINT_CHANGE, NODE_CONDITION_CHANGE, PV_ADD, PV_UPDATE, PVC_ADD, PVC_UPDATE, STORAGE_CLASS_ADD,
    STORAGE_CLASS_UPDATE, CSI_NODE_ADD, CSI_NODE_UPDATE, CSI_DRIVER_ADD, CSI_DRIVER_UPDATE,
    CSI_STORAGE_CAPACITY_ADD, CSI_STORAGE_CAPACITY_UPDATE, WILDCARD_EVENT, UNSCHEDULABLE_TIMEOUT,
)}
"""Every cluster event above by its label."""


# ---------------------------------------------------------------- node updates
def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """The events a node update produces, in upstream order (NodeSchedulingPropertiesChange).

    Comparisons follow equality.Semantic.DeepEqual: quantities by value, nil and empty
    maps/slices equal, taints order-sensitive; conditions compare only type -> status."""
    events: list[ClusterEvent] = []
    # nodeSpecUnschedulableChanged: only a flip to schedulable can help a pod.
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        events.append(NODE_SPEC_UNSCHEDULABLE_CHANGE)
    if dict(old.allocatable) != dict(new.allocatable):
        events.append(NODE_ALLOCATABLE_CHANGE)
    if dict(old.meta.labels) != dict(new.meta.labels):
        events.append(NODE_LABEL_CHANGE)
    if tuple(old.taints) != tuple(new.taints):
        events.append(NODE_TAINT_CHANGE)
    if {c.type: c.status for c in old.conditions} != {c.type: c.status for c in new.conditions}:
        events.append(NODE_CONDITION_CHANGE)
    if dict(old.meta.annotations) != dict(new.meta.annotations):
        events.append(NODE_ANNOTATION_CHANGE)
    return events


def node_update_events_136(old: Node, new: Node, declared_features: bool = True) -> list[ClusterEvent]:
    """1.36's NodeSchedulingPropertiesChange: v1.30's split plus UpdateNodeDeclaredFeature
    (status.declaredFeatures, with the NodeDeclaredFeatures gate), labelled as 1.36 labels
    events (ClusterEvent.Label(): ``NodeUpdateNodeLabel``...)."""
    events = [ClusterEvent(GVK.NODE, e.action_type, f"Node{_ACTION_LABELS[e.action_type]}")
              for e in node_update_events(old, new)]
    if declared_features and _declared(old) != _declared(new):
        events.append(ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeUpdateNodeDeclaredFeature"))
    return events


def _declared(node: Node) -> object:
    status = node.raw.get("status")
    return status.get("declaredFeatures") if isinstance(status, Mapping) else None


_ACTION_LABELS = {
    ActionType.ADD: "Add", ActionType.DELETE: "Delete", ActionType.UPDATE: "Update",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable", ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint", ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel", ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
}


# Events are immutable values: one per (resource, action), made once.
_EVENTS_136: dict[tuple[str, int], ClusterEvent] = {}


def event_136(resource: str, action: ActionType) -> ClusterEvent:
    """A 1.36 event labelled as ClusterEvent.Label() does (``<Resource><ActionType>``)."""
    key = (resource, int.__int__(action))  # Enum.__hash__ is Python code
    ev = _EVENTS_136.get(key)
    if ev is None:
        ev = _EVENTS_136[key] = ClusterEvent(
            resource, action, f"{resource}{_ACTION_LABELS.get(action, str(int(action)))}")
    return ev


_AS_136: dict[tuple[str, int, str], ClusterEvent] = {}


def as_136(event: ClusterEvent) -> ClusterEvent:
    """A v1.30-style event as 1.36 sends it: a pod event on the internal AssignedPod /
    UnschedulablePod resource (by the v1.30 label), labelled ``<Resource><ActionType>``."""
    key = (event.resource, event.actions, event.label)
    got = _AS_136.get(key)
    if got is not None:
        return got
    if event.is_wildcard() or event.resource == GVK.WILDCARD:
        got = event
    else:
        resource = event.resource
        if resource == GVK.POD:
            resource = GVK.UNSCHEDULABLE_POD if event.label.startswith("Unschedul") else GVK.ASSIGNED_POD
        got = event_136(resource, event.action_type)
    _AS_136[key] = got
    return got


def pod_update_events(old: Pod, new: Pod, dra: bool = True) -> list[ClusterEvent]:
    """1.36's PodSchedulingPropertiesChange: the finer update kinds of a pod update, on the
    AssignedPod or UnschedulablePod resource; plain Update when none applies. ``dra``:
    DynamicResourceAllocation on (generated-claim changes count)."""
    resource = GVK.ASSIGNED_POD if new.node_name else GVK.UNSCHEDULABLE_POD
    actions: list[ActionType] = []
    if old.meta.labels is not new.meta.labels and dict(old.meta.labels) != dict(new.meta.labels):
        # extractPodLabelsChange
        actions.append(ActionType.UPDATE_POD_LABEL)
    # extractPodScaleDown: any request reduced or gone.
    new_req = new.requests
    if old.requests is not new_req and any(r not in new_req or v > new_req[r] for r, v in old.requests.items()):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):  # extractPodTolerationChange: a count
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if dra and old.resource_claim_statuses is not new.resource_claim_statuses \
            and dict(old.resource_claim_statuses) != dict(new.resource_claim_statuses):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [event_136(resource, a) for a in actions]


# ---------------------------------------------------------------- registrations
# framework.UnrollWildCardResource (v1.30): what a plugin without EventsToRegister gets.
_UNROLLED_RESOURCES = (
    GVK.POD, GVK.NODE, GVK.PERSISTENT_VOLUME, GVK.PERSISTENT_VOLUME_CLAIM, GVK.CSI_NODE, GVK.CSI_DRIVER,
    GVK.CSI_STORAGE_CAPACITY, GVK.STORAGE_CLASS, GVK.POD_SCHEDULING_CONTEXT, "ResourceClaim", "ResourceClass",
    "ResourceClaimParameters", "ResourceClassParameters",
)

# shouldHaveEnqueueExtensions: only plugins that can reject a pod contribute events.
_REJECTING_POINTS = ("PreEnqueue", "PreFilter", "Filter", "Reserve", "Permit")

RegisteredEvent = ClusterEvent | ClusterEventWithHint
_T = TypeVar("_T")


def unroll_wildcard_resource() -> list[ClusterEvent]:
    """Every specific resource with action All (framework.UnrollWildCardResource)."""
    return [ClusterEvent(r, ActionType.ALL) for r in _UNROLLED_RESOURCES]


def events_by_plugin_of(plugins: Iterable[object]) -> dict[str, list[ClusterEvent]]:
    """A profile's registrations, as the framework collects them (fillEnqueueExtensions):
    plugins implementing none of PreEnqueue/PreFilter/Filter/Reserve/Permit contribute
    nothing; a rejecting plugin without ``events_to_register`` registers every resource
    with action All. Plugins are taken once each, by name, in the given order."""
    return {name: [_event(e) for e in regs] for name, regs in registrations_by_plugin_of(plugins).items()}


def registrations_by_plugin_of(plugins: Iterable[object]) -> dict[str, list[RegisteredEvent]]:
    """As :func:`events_by_plugin_of`, keeping each registration's QueueingHintFn (what the
    1.36 queue consults)."""
    out: dict[str, list[RegisteredEvent]] = {}
    for p in plugins:
        name = str(getattr(p, "name", ""))
        if name in out or not any(implements(p, point) for point in _REJECTING_POINTS):
            continue
        register = getattr(p, "events_to_register", None)
        out[name] = list(register()) if callable(register) else list(unroll_wildcard_resource())
    return out


HintEntry = tuple[str, QueueingHintFn | None]


def build_hint_fn_map(events_by_plugin: Mapping[str, Sequence[RegisteredEvent]]
                      ) -> dict[ClusterEvent, list[HintEntry]]:
    """buildQueueingHintMap with the hint functions (None = defaultQueueingHintFn, Queue).
    The same Node/Add -> Node/UpdateNodeTaint rule as :func:`build_queueing_hint_map`, the
    added entry with the default hint. Events are keyed without their labels."""
    return _hint_map(events_by_plugin, lambda e: ClusterEvent(e.resource, e.action_type),
                     lambda plugin, e: (plugin, e.hint if isinstance(e, ClusterEventWithHint) else None),
                     lambda plugin: (plugin, None))


def _event(e: RegisteredEvent) -> ClusterEvent:
    return e.event if isinstance(e, ClusterEventWithHint) else e


def build_queueing_hint_map(events_by_plugin: Mapping[str, Sequence[RegisteredEvent]]
                            ) -> dict[ClusterEvent, list[str]]:
    """Registered event -> plugin names (scheduler.go: buildQueueingHintMap). With
    SchedulerQueueingHints off (v1.30 default) every hint is "Queue", so plugin names are
    all the queue needs. A plugin registering Node/Add but no Node/UpdateNodeTaint bit also
    gets Node/UpdateNodeTaint: NodeAdd's preCheck may have hidden the node when it was added
    (kubernetes#109437), and a later taint update is the only chance left."""
    return _hint_map(events_by_plugin, lambda e: e, lambda plugin, e: plugin, lambda plugin: plugin)


def _hint_map(events_by_plugin: Mapping[str, Sequence[RegisteredEvent]], key: Callable[[ClusterEvent], ClusterEvent],
              entry: Callable[[str, RegisteredEvent], _T], taint_entry: Callable[[str], _T]
              ) -> dict[ClusterEvent, list[_T]]:
    """buildQueueingHintMap: per registered event (``key``), an ``entry`` per plugin; a
    plugin registering Node/Add but no Node/UpdateNodeTaint bit also gets ``taint_entry`` for
    Node/UpdateNodeTaint. Plugins registering nothing are left out: their pods only move by
    their own update (e.g. SchedulingGates)."""
    hint_map: dict[ClusterEvent, list[_T]] = {}
    for plugin, registered in events_by_plugin.items():
        if not registered:
            continue
        node_added = node_taint_updated = False
        for e in registered:
            event = _event(e)
            if event.resource == GVK.NODE:
                node_added = node_added or bool(event.action_type & ActionType.ADD)
                node_taint_updated = node_taint_updated or bool(event.action_type & ActionType.UPDATE_NODE_TAINT)
            hint_map.setdefault(key(event), []).append(entry(plugin, e))
        if node_added and not node_taint_updated:
            hint_map.setdefault(ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_TAINT), []).append(taint_entry(plugin))
    return hint_map
