"""The plugin-author API: one Protocol per extension point (framework/interface.go).

A plugin is a plain class with a ``name`` and any of the methods below; the framework
detects which extension points it implements by these methods. Every method that can fail
returns ``Status | None`` (``None`` = success). Plugins never raise for expected outcomes.
Enabling a plugin at an extension point whose method it lacks is a configuration error.

The plugin is made by a factory ``new(args, handle)`` (a function, or the class itself),
registered under the plugin's ``name``: in-tree in ``kubesched.plugins.registry``, out of
tree through the ``kubesched.plugins`` entry-point group (``MyPlugin = "my_pkg:new"``) or
``kubesched simulate --plugin my_pkg:new`` (the module's ``NAME`` gives the name).

Typed args: annotate the factory's ``args`` parameter with a dataclass and the runtime
decodes the plugin's ``pluginConfig`` args into it before calling the factory::

    @dataclass(frozen=True)
    class MyArgs:
        timeout_seconds: int = 30          # pluginConfig: args: {timeoutSeconds: 60}
        groups: dict[str, int] = field(default_factory=dict)

    def new(args: MyArgs, handle: Handle) -> MyPlugin: ...

camelCase keys map to snake_case fields; unknown keys, missing required fields and values
of the wrong type (bool, int, float, str, Literal, Enum, list/tuple/set, dict, nested
dataclasses, ``X | None``) are ConfigErrors naming ``profiles[i].pluginConfig[j].args.<key>``.
No args configured means the dataclass's defaults (or None if annotated ``MyArgs | None``).
Cross-field checks go in ``__post_init__``: a ValueError is reported at ``args``, a
``kubesched.errors.FieldError("timeoutSeconds", "must be positive")`` at that field. A
factory not annotated with a dataclass gets the args as written (a mapping, or None).

Optional *batch* methods (``filter_batch``, ``score_batch``, ``normalize_score_batch``) work
over many nodes at once through the columnar :class:`NodeTable`; when present, the
framework uses them on the hot path and falls back to the per-node method to build the
exact Status of a node the batch rejected. A batch method must agree with its per-node
method on every node.

A filter plugin may also offer ``filter_batch_status(state, pod, table, rows) -> (codes,
statuses)``: per row an index into ``statuses`` (0 = the node fits, i >= 1 = the node gets
``statuses[i]``), so rejected nodes get their exact Status without a per-node call. The
scheduler decides pass/fail with ``filter_batch`` over chunks of rows and calls
``filter_batch_status`` afterwards on just the rows the plugin rejected first: both must
accept any subset of the table's rows, in any order. A plugin whose batch methods hold only
for some cycles offers ``filter_batch_applies(state) -> bool`` as well: when it returns False
the plugin is filtered node by node in that cycle (its per-node ``filter`` then keeps any
bookkeeping that depends on which nodes it ran on).

A score plugin that knows, from the cycle state, that it scores 0 on every node for this pod
(and that its normalization keeps those zeros) may offer ``scores_all_zero(state) -> bool``:
when True its Score and NormalizeScore are not called and it adds 0 (a score plugin without
PreScore cannot Skip, so upstream calls it on every node for nothing).

Preemption's fast path. DefaultPreemption's dry run (SelectVictimsOnNode) and the
scheduler's filtering of nodes holding nominated pods (RunFilterPluginsWithNominatedPods)
evaluate "this node with some pods removed or added" by cloning the node and the cycle state,
calling every PreFilter AddPod/RemovePod and running the whole Filter chain per trial. They
skip all of that — same victims, same statuses — when every active (not Skipped) Filter
plugin declares, for this pod and cycle, one of two optional contracts
(:class:`PreemptionFastPathPlugin`, :class:`ResourceFitPlugin`; see
``kubesched.plugins.helpers.filterplan``), and every active PreFilter plugin with
AddPod/RemovePod extensions is node-only. A plugin with neither method keeps the per-node path
for every pod it is active for: declare a contract only when it holds exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.nodetable import NodeTable
from kubesched.framework.signers import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import (
    ClusterEventWithHint,
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from kubesched.objects import Pod

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name, unique in the registry (its upstream Name())."""

    name: str


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """True if ``a`` must be popped before ``b``. Exactly one per profile."""
        ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Cluster events that may make a pod this plugin rejected schedulable again."""
        ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Gate the pod before it enters activeQ; a non-success keeps it gated."""
        ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        """Update the PreFilter state as if ``pod_info_to_add`` ran on ``node_info``."""
        ...

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        """Update the PreFilter state as if ``pod_info_to_remove`` were gone."""
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status | None]:
        """Run once per cycle before filtering. Return Skip to disable this plugin's
        Filter (and extensions) for the cycle; Unschedulable(AndUnresolvable) rejects the
        pod on every node; a PreFilterResult restricts the nodes evaluated."""
        ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """AddPod/RemovePod hooks used by nominated-pod filtering and preemption, or None."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Can ``pod`` run on this node? Unschedulable / UnschedulableAndUnresolvable with
        kube-scheduler's reason strings when not. Must not mutate ``node_info``."""
        ...


@runtime_checkable
class BatchFilterPlugin(Protocol):
    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray:
        """For each row of ``rows``, True iff ``filter`` would succeed on that node."""
        ...


@runtime_checkable
class BatchFilterStatusPlugin(Protocol):
    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: IntArray) -> tuple[IntArray, list[Status | None]]:
        """Per row, an index into the returned statuses: 0 when ``filter`` would succeed,
        otherwise the index of exactly the Status ``filter`` would return for that node."""
        ...


@runtime_checkable
class BatchFilterAppliesPlugin(Protocol):
    def filter_batch_applies(self, state: CycleState) -> bool:
        """Whether ``filter_batch`` (and ``filter_batch_status``) hold for this cycle; False:
        the plugin is filtered node by node in it."""
        ...


@runtime_checkable
class ScoresAllZeroPlugin(Protocol):
    def scores_all_zero(self, state: CycleState) -> bool:
        """True: Score returns 0 on every node for this cycle's pod, and NormalizeScore keeps
        the zeros; the framework then calls neither."""
        ...


@runtime_checkable
class PreemptionFastPathPlugin(Protocol):
    def preemption_fast_path(self, state: CycleState, pod: Pod) -> bool:
        """Optional, for a Filter plugin (or a PreFilter plugin with extensions): True
        promises that, for this pod and this cycle's state, the plugin is *node-only* — its
        Filter returns the same Status on a node whatever pods are on the node or added to
        it, before or after any AddPod/RemovePod of this cycle's PreFilter extensions; that
        those extensions (if any) never fail and change no Filter verdict; and that Filter
        does not change the cycle state. Preemption may then evaluate this Filter once per
        node and never clone for it. False (or no such method) keeps the per-node path.
        Examples: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, VolumeZone
        (always); NodePorts when the pod wants no host port."""
        ...


@runtime_checkable
class ResourceFitPlugin(Protocol):
    def preemption_resource_fit(self, state: CycleState, pod: Pod) -> object | None:
        """Optional, for a Filter plugin whose verdict is resource arithmetic: a
        ``kubesched.plugins.helpers.resourcefit.ResourceFit`` promising that, for this pod
        and cycle, the plugin's Filter on any node returns exactly ``fit.status(fit.free(
        node_info), fit.alloc(node_info))`` (None = fits) — fitsRequest's checks of the pod count and the requested
        resources against ``allocatable - requested`` — with the plugin name set, and that the
        plugin has no PreFilter extensions. Preemption then adds and removes pods as usage
        vectors. None: not this cycle (the per-node path). NodeResourcesFit implements it."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(self, state: CycleState, pod: Pod, statuses: dict[str, Status]) -> tuple[PostFilterResult | None, Status]:
        """Run when no node fits (e.g. preemption). ``statuses`` maps node name to its
        filter status."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Prepare scoring over the feasible ``nodes``; Skip disables this plugin's Score."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The node's raw score. Unless the plugin normalizes, it must be within
        [0, MAX_NODE_SCORE]. Raise to abort the cycle with an error."""
        ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Rewrite ``scores`` in place into [0, MAX_NODE_SCORE]."""
        ...


@runtime_checkable
class BatchScorePlugin(Protocol):
    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> IntArray:
        """Raw scores for ``rows``, equal to ``score`` on each."""
        ...


@runtime_checkable
class BatchNormalizePlugin(Protocol):
    def normalize_score_batch(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        """``normalize_score`` over an array (same order as the nodes scored)."""
        ...


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    def sign_pod(self, pod: Pod) -> Sequence[SignFragment] | Status:
        """fwk.SignPlugin (KEP-5598, OpportunisticBatching): the parts of ``pod`` this plugin's
        PreFilter/Filter/PreScore/Score decisions depend on, as fragments of the pod's
        signature (:mod:`kubesched.framework.signers`; a key shared with other plugins must get
        the same value). A Status instead refuses: Unschedulable when the plugin cannot promise
        that pods with equal signatures fit and score alike (the pod is then not batched), Error
        when something unexpected happened (the same, reported). Every PreFilter, Filter,
        PreScore and Score plugin of a profile must have it, or the profile never batches."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Claim resources for the pod on the chosen node before binding."""
        ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Undo reserve; must be idempotent."""
        ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Allow (success), reject, or Wait with a timeout in seconds (capped at 15 min)."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the pod; return Skip to let the next bind plugin do it."""
        ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


# Extension point name -> the method that marks a plugin as implementing it.
EXTENSION_POINTS: dict[str, str] = {
    "PreEnqueue": "pre_enqueue",
    "QueueSort": "less",
    "PreFilter": "pre_filter",
    "Filter": "filter",
    "PostFilter": "post_filter",
    "PreScore": "pre_score",
    "Score": "score",
    "Reserve": "reserve",
    "Permit": "permit",
    "PreBind": "pre_bind",
    "Bind": "bind",
    "PostBind": "post_bind",
}


def implements(plugin: object, extension_point: str) -> bool:
    return callable(getattr(plugin, EXTENSION_POINTS[extension_point], None))
