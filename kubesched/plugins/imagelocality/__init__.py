"""ImageLocality (framework/plugins/imagelocality/image_locality.go)."""

from kubesched.plugins.imagelocality.plugin import NAME, ImageLocality, new

__all__ = ["NAME", "ImageLocality", "new"]
