"""VolumeZone (framework/plugins/volumezone/volume_zone.go)."""

from kubesched.plugins.volumezone.plugin import NAME, VolumeZone, new

__all__ = ["NAME", "VolumeZone", "new"]
