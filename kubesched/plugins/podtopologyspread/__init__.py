"""PodTopologySpread (framework/plugins/podtopologyspread)."""

from kubesched.plugins.podtopologyspread.plugin import NAME, PodTopologySpread, new

__all__ = ["NAME", "PodTopologySpread", "new"]
