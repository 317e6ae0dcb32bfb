"""DefaultPreemption (framework/plugins/defaultpreemption/default_preemption.go with
framework/preemption/preemption.go)."""

from kubesched.plugins.defaultpreemption.plugin import (
    NAME,
    Candidate,
    DefaultPreemption,
    PreemptionResult,
    Victims,
    new,
)

__all__ = ["NAME", "Candidate", "DefaultPreemption", "PreemptionResult", "Victims", "new"]
