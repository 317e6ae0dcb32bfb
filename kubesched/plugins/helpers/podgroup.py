"""Pod group helpers (framework/plugins/helper/podgroup.go)."""

from __future__ import annotations

from kubesched.objects import Pod


def matching_scheduling_group(pod1: Pod, pod2: Pod) -> bool:
    """MatchingSchedulingGroup: both pods name the same PodGroup of the same namespace."""
    return (pod1.namespace == pod2.namespace and pod1.scheduling_group is not None
            and pod2.scheduling_group is not None and pod1.scheduling_group == pod2.scheduling_group)
