"""Pods waiting at Permit (framework/runtime/waiting_pods_map.go).

A waiting pod has one deadline per plugin that asked it to wait. ``allow(plugin)`` clears
that plugin; the pod is allowed once every plugin has allowed. ``reject`` (or any deadline
passing) rejects it and stops all its timers. Time is whatever clock the scheduler runs on
(a virtual clock in simulation): expired timers are fired by :meth:`WaitingPods.expire`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kubesched.framework import Code, Status
from kubesched.objects import Pod

MAX_PERMIT_TIMEOUT = 15 * 60.0  # framework/runtime: maxTimeout


@dataclass(slots=True)
class WaitingPod:
    """framework.waitingPod: a pod held at Permit, its plugins' deadlines and its outcome."""

    pod: Pod
    node_name: str
    started: float
    deadlines: dict[str, float] = field(default_factory=dict)  # plugin -> absolute deadline
    result: Status | None = None  # None while waiting; SUCCESS-code when allowed; rejected otherwise

    def pending_plugins(self) -> list[str]:
        return sorted(self.deadlines)

    def allow(self, plugin: str) -> None:
        """WaitingPod.Allow: the pod goes on once every waiting plugin allowed it."""
        if self.result is not None:
            return
        self.deadlines.pop(plugin, None)
        if not self.deadlines:
            self.result = Status(Code.SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        """WaitingPod.Reject: stops every timer; the first decision wins."""
        if self.result is not None:
            return
        self.deadlines.clear()
        self.result = Status(Code.UNSCHEDULABLE, (message,), plugin)

    @property
    def done(self) -> bool:
        return self.result is not None


class WaitingPods:
    """The map of waiting pods by UID."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, pod: Pod, node_name: str, now: float, timeouts: dict[str, float]) -> WaitingPod:
        wp = WaitingPod(pod, node_name, now,
                        {plugin: now + min(max(t, 0.0), MAX_PERMIT_TIMEOUT) for plugin, t in timeouts.items()})
        self._pods[pod.uid] = wp
        return wp

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def next_deadline(self) -> float | None:
        deadlines = [d for wp in self._pods.values() if not wp.done for d in wp.deadlines.values()]
        return min(deadlines) if deadlines else None

    def expire(self, now: float) -> list[WaitingPod]:
        """Fire every timer due at ``now``: each such pod is rejected by the first plugin
        whose wait ran out ("rejected due to timeout after waiting %v at plugin %v")."""
        fired = []
        for wp in list(self._pods.values()):
            if wp.done:
                continue
            due = sorted((d, p) for p, d in wp.deadlines.items() if d <= now)
            if due:
                deadline, plugin = due[0]
                waited = deadline - wp.started
                wp.reject(plugin, f"rejected due to timeout after waiting {_go_duration(waited)} at plugin {plugin}")
                fired.append(wp)
        return fired


def _go_duration(seconds: float) -> str:
    """time.Duration's String() for whole/fractional seconds (e.g. 10s, 1m30s, 1.5s)."""
    total = round(seconds, 9)
    if total == 0:
        return "0s"
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    out = ""
    if h:
        out += f"{int(h)}h"
    if h or m:
        out += f"{int(m)}m"
    sec = f"{s:.9f}".rstrip("0").rstrip(".")
    return out + f"{sec}s"
