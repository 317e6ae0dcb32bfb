"""The scheduling queue (pkg/scheduler/internal/queue, v1.30, queueing hints off): activeQ,
backoffQ and unschedulablePods driven by an injected clock, the cluster events that move
pods between them, and the nominator."""

from kubesched._queue import events
from kubesched._queue.clock import Clock, FakeClock, RealClock
from kubesched._queue.events import (
    CLUSTER_EVENTS,
    build_queueing_hint_map,
    events_by_plugin_of,
    node_update_events,
    unroll_wildcard_resource,
)
from kubesched._queue.nominator import QueueNominator
from kubesched._queue.queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    GATED,
    UNSCHEDULABLE_PODS,
    QueueError,
    SchedulingQueue,
    is_pod_updated,
)

__all__ = [
    "ACTIVE_Q", "BACKOFF_Q", "CLUSTER_EVENTS", "GATED", "UNSCHEDULABLE_PODS", "Clock", "FakeClock", "QueueError",
    "QueueNominator", "RealClock", "SchedulingQueue", "build_queueing_hint_map", "events", "events_by_plugin_of",
    "is_pod_updated", "node_update_events", "unroll_wildcard_resource",
]
