"""ServiceAffinity (framework/plugins/serviceaffinity/service_affinity.go, v1.21/v1.22;
removed upstream since). Legacy Policy's CheckServiceAffinity predicate and
serviceAntiAffinity priorities."""

from kubesched.plugins.serviceaffinity.plugin import ERR_REASON, NAME, ServiceAffinity, new

__all__ = ["ERR_REASON", "NAME", "ServiceAffinity", "new"]
