"""GangScheduling (framework/plugins/gangscheduling/gangscheduling.go, alpha in 1.35)."""

from kubesched.plugins.gangscheduling.plugin import NAME, PERMIT_TIMEOUT, GangScheduling, new

__all__ = ["NAME", "PERMIT_TIMEOUT", "GangScheduling", "new"]
