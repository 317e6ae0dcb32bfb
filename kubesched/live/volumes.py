"""VolumeBinding's BindPodVolumes in live mode (framework/plugins/volumebinding/binder.go, v1.30).

The VolumeBinding plugin's PreBind records the assumed decisions for the chosen node on the
cycle state (``pending_volume_bindings``): PVs with ``spec.claimRef`` set to the claim they were
matched with, and claims to provision annotated ``volume.kubernetes.io/selected-node``. Right
after the PreBind plugins, the binding cycle calls :class:`LiveVolumeBinder` (the Scheduler's
``volume_binder`` hook), which does what upstream's BindPodVolumes does:

- bindAPIUpdate: PUT each PV, then each claim (conditional on the resourceVersion the scheduler
  saw: a 409 fails the binding cycle and the pod is retried; nothing is rolled back);
- then waits until the PV controller (and the external provisioner) have bound every claim,
  checking the informers' objects (VolumeBinder.check_bindings: the claim has volumeName and
  ``pv.kubernetes.io/bind-completed``, its PV's claimRef is set and fits the node); it fails at
  once when a provisioner removed the selected-node annotation (it gave up), a PV lost its
  claimRef, a PV/PVC or the pod was deleted, and after the profile's
  ``VolumeBindingArgs.bindTimeoutSeconds`` (default 600 s).

Failures read as upstream's: ``running PreBind plugin "VolumeBinding": binding volumes: ...``
(``context deadline exceeded`` on timeout, ``context canceled`` when the scheduler stops).
Upstream polls every second; here each informer change wakes the wait too (the runner's lock is
a Condition notified on every change), so a binding completes as soon as it is seen, and at
least once per ``poll_interval``. The runner's lock is released while the updates are on the
wire and while waiting, so scheduling goes on meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from kubesched._runtime.framework import Framework
from kubesched.cluster.live import LiveCluster
from kubesched.config.args import VolumeBindingArgs
from kubesched.errors import ApiError, FieldError
from kubesched.framework import Code, CycleState, Status
from kubesched.objects import Pod
from kubesched.plugins.helpers.volumes import go_quote
from kubesched.plugins.volumebinding import NAME as VOLUME_BINDING
from kubesched.plugins.volumebinding import BindingInfo, pending_volume_bindings
from kubesched.plugins.volumebinding.binder import BinderError, VolumeBinder

log = logging.getLogger(__name__)

POLL_INTERVAL = 1.0
DEFAULT_BIND_TIMEOUT = float(VolumeBindingArgs().bind_timeout_seconds)
DEADLINE_EXCEEDED = "context deadline exceeded"
CANCELED = "context canceled"


def bind_timeouts(profiles: Mapping[str, Framework]) -> dict[str, float]:
    """Each profile's VolumeBindingArgs.bindTimeoutSeconds (its VolumeBinding PreBind plugin's
    args); profiles without the plugin at PreBind have nothing to bind."""
    out: dict[str, float] = {}
    for name, fwk in profiles.items():
        for plugin in fwk.plugins_at("PreBind"):
            if plugin.name == VOLUME_BINDING:
                args = getattr(plugin, "args", None)
                out[name] = float(args.bind_timeout_seconds) if isinstance(args, VolumeBindingArgs) \
                    else DEFAULT_BIND_TIMEOUT
    return out


def _failure(message: str) -> Status:
    # What RunPreBindPlugins makes of VolumeBinding's error.
    return Status(Code.ERROR, (f"running PreBind plugin {go_quote(VOLUME_BINDING)}: {message}",), VOLUME_BINDING)


class LiveVolumeBinder:
    """The Scheduler's ``volume_binder`` hook for live mode, called in the binding cycle under
    the runner's lock. ``unlocked()`` releases that lock for the duration of a block (API
    calls); ``wait(seconds)`` waits with it released, returning early when an informer
    reports a change (or the scheduler stops); ``stopping()`` tells that the scheduler is
    shutting down."""

    def __init__(self, cluster: LiveCluster, timeouts: Mapping[str, float], *,
                 unlocked: Callable[[], AbstractContextManager[Any]], wait: Callable[[float], Any],
                 stopping: Callable[[], bool], poll_interval: float = POLL_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.objects = cluster.objects
        self.timeouts = dict(timeouts)
        self.poll_interval = poll_interval
        self._unlocked = unlocked
        self._wait = wait
        self._stopping = stopping
        self._clock = clock
        # Reads the informers' objects (GetAPIPV / GetAPIPVC), never assumed versions.
        self._binder = VolumeBinder(cluster.objects)

    def __call__(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        pending = pending_volume_bindings(state)
        if pending is None or (not pending.static_bindings and not pending.dynamic_provisions):
            return None
        timeout = self.timeouts.get(pod.scheduler_name, DEFAULT_BIND_TIMEOUT)
        # bindAPIUpdate: PVs first, then the claims to provision; the first error stops.
        try:
            with self._unlocked():
                bindings = [BindingInfo(b.pvc, self.cluster.update_pv(b.pv)) for b in pending.static_bindings]
                claims = [self.cluster.update_pvc(c) for c in pending.dynamic_provisions]
        except (ApiError, FieldError) as e:
            log.info("binding volumes of %s: %s", pod.key, e)
            return _failure(str(e))
        # wait.PollUntilContextTimeout(ctx, 1 s, bindTimeout, immediate=false, checkBindings)
        deadline = self._clock() + timeout
        while True:
            now = self._clock()
            if now < deadline and not self._stopping():
                self._wait(min(self.poll_interval, deadline - now))
            if self._stopping():
                return _failure(f"binding volumes: {CANCELED}")
            if self._clock() >= deadline:
                return _failure(f"binding volumes: {DEADLINE_EXCEEDED}")
            node = self.objects.node(node_name)
            if node is None:
                return _failure(f"binding volumes: failed to get node {go_quote(node_name)}: node "
                                f"{go_quote(node_name)} not found")
            try:
                if self._binder.check_bindings(pod, node, bindings, claims):
                    return None
            except BinderError as e:
                return _failure(f"binding volumes: {e}")


__all__ = ["DEFAULT_BIND_TIMEOUT", "POLL_INTERVAL", "LiveVolumeBinder", "bind_timeouts"]
