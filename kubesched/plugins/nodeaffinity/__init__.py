"""NodeAffinity (framework/plugins/nodeaffinity/node_affinity.go)."""

from kubesched.plugins.nodeaffinity.plugin import NAME, NodeAffinity, new

__all__ = ["NAME", "NodeAffinity", "new"]
