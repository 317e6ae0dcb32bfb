"""SchedulingGates (framework/plugins/schedulinggates/scheduling_gates.go)."""

from kubesched.plugins.schedulinggates.plugin import NAME, SchedulingGates, new

__all__ = ["NAME", "SchedulingGates", "new"]
