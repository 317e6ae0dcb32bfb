"""NodeUnschedulable (framework/plugins/nodeunschedulable/node_unschedulable.go)."""

from kubesched.plugins.nodeunschedulable.plugin import NAME, NodeUnschedulable, new

__all__ = ["NAME", "NodeUnschedulable", "new"]
