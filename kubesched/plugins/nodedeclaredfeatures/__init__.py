"""NodeDeclaredFeatures (framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go, v1.36)."""

from kubesched.plugins.nodedeclaredfeatures.plugin import NAME, NodeDeclaredFeatures, new

__all__ = ["NAME", "NodeDeclaredFeatures", "new"]
