"""DynamicResources (framework/plugins/dynamicresources/dynamicresources.go, v1.36)."""

from kubesched.plugins.dynamicresources.plugin import NAME, DynamicResources, new

__all__ = ["NAME", "DynamicResources", "new"]
