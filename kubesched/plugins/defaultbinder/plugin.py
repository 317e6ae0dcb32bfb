"""DefaultBinder: binds the pod to the chosen node through the cluster (Bind).

Mirrors framework/plugins/defaultbinder/default_binder.go.
"""

from __future__ import annotations

from kubesched.errors import ApiError
from kubesched.framework import ClusterEventWithHint, CycleState, Handle, Status
from kubesched.objects import Pod

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream DefaultBinder is no EnqueueExtensions: a Bind plugin rejects no pod.
        return []

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """DefaultBinder.Bind: create the pods/binding subresource; a failed API call is an
        Error status (framework.AsStatus)."""
        try:
            self.handle.bind_pod(pod, node_name)
        except ApiError as err:
            return Status.as_error(err)
        return None


def new(args: object, handle: Handle) -> DefaultBinder:
    """Plugin factory (registry entry). DefaultBinder takes no args."""
    return DefaultBinder(handle)
