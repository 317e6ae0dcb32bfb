"""Taint matching shared by TaintToleration and PodTopologySpread's nodeTaintsPolicy
(component-helpers/scheduling/corev1: FindMatchingUntoleratedTaint with
plugins/helper: DoNotScheduleTaintsFilterFunc)."""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.objects import Taint, Toleration, tolerations_tolerate_taint
from kubesched.objects.model import NO_EXECUTE, NO_SCHEDULE


def find_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint none of ``tolerations`` tolerates, or None."""
    tols = tolerations if isinstance(tolerations, tuple) else tuple(tolerations)
    for t in taints:
        if t.effect != NO_SCHEDULE and t.effect != NO_EXECUTE:
            continue
        if not tolerations_tolerate_taint(tols, t):
            return t
    return None


__all__ = ["find_untolerated_taint"]
