"""NodePorts (framework/plugins/nodeports/node_ports.go)."""

from kubesched.plugins.nodeports.plugin import NAME, NodePorts, new

__all__ = ["NAME", "NodePorts", "new"]
