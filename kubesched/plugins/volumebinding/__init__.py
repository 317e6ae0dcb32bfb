"""VolumeBinding (framework/plugins/volumebinding/volume_binding.go, binder.go)."""

from kubesched.plugins.volumebinding.binder import BindingInfo, PodVolumes
from kubesched.plugins.volumebinding.plugin import NAME, VolumeBinding, new, pending_volume_bindings

__all__ = ["NAME", "BindingInfo", "PodVolumes", "VolumeBinding", "new", "pending_volume_bindings"]
