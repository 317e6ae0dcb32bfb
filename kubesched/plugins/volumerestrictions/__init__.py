"""VolumeRestrictions (framework/plugins/volumerestrictions/volume_restrictions.go)."""

from kubesched.plugins.volumerestrictions.plugin import NAME, VolumeRestrictions, new

__all__ = ["NAME", "VolumeRestrictions", "new"]
