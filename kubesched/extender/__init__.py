"""HTTP scheduler extenders (webhooks configured in `extenders:`), both sides.

- Client, for the scheduler: :class:`HTTPExtender` (one per ``extenders[]`` entry of the
  configuration; build them with :func:`new_http_extenders`) and the cycle helpers
  :func:`run_filter_extenders`, :func:`run_prioritize_extenders`, :func:`run_bind_extenders`,
  :func:`run_preemption_extenders`, mirroring kube-scheduler v1.30.
- SDK, to write an extender in Python: :mod:`kubesched.extender.server` (``ExtenderApp``),
  served with ``kubesched extender serve module:app --port N``; its node cache fed by a watch
  of the cluster: :mod:`kubesched.extender.watch` (``--kubeconfig``).
- Wire format (byte-compatible with kube-scheduler's Go encoding): :mod:`kubesched.extender.wire`.
"""

from kubesched.extender.client import (
    EXTENDER_SCORE_SCALE,
    ExtenderScores,
    HTTPExtender,
    SchedulerExtender,
    Victims,
    VictimsLike,
    ignored_extended_resources,
    new_http_extenders,
    run_bind_extenders,
    run_filter_extenders,
    run_preemption_extenders,
    run_prioritize_extenders,
    with_ignored_extended_resources,
)
from kubesched.extender.wire import MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY, HostPriority, MetaVictims, WireError
from kubesched.framework import Binding, NodeInfoGetter

__all__ = [
    "EXTENDER_SCORE_SCALE", "MAX_EXTENDER_PRIORITY", "MIN_EXTENDER_PRIORITY", "Binding", "ExtenderScores",
    "HTTPExtender", "HostPriority", "MetaVictims", "NodeInfoGetter", "SchedulerExtender", "Victims", "VictimsLike",
    "WireError",
    "ignored_extended_resources", "new_http_extenders", "run_bind_extenders", "run_filter_extenders",
    "run_preemption_extenders", "run_prioritize_extenders", "with_ignored_extended_resources",
]
