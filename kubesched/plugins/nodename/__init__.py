"""NodeName (framework/plugins/nodename/node_name.go)."""

from kubesched.plugins.nodename.plugin import NAME, NodeName, new

__all__ = ["NAME", "NodeName", "new"]
