"""TaintToleration (framework/plugins/tainttoleration/taint_toleration.go)."""

from kubesched.plugins.tainttoleration.plugin import NAME, TaintToleration, new

__all__ = ["NAME", "TaintToleration", "new"]
