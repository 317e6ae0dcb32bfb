"""DefaultBinder (framework/plugins/defaultbinder/default_binder.go)."""

from kubesched.plugins.defaultbinder.plugin import NAME, DefaultBinder, new

__all__ = ["NAME", "DefaultBinder", "new"]
