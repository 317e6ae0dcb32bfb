"""InterPodAffinity (framework/plugins/interpodaffinity: plugin.go, filtering.go, scoring.go)."""

from kubesched.plugins.interpodaffinity.plugin import NAME, InterPodAffinity, new

__all__ = ["NAME", "InterPodAffinity", "new"]
