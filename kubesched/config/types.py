"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as typed, immutable values.

These mirror upstream's *internal* config types (pkg/scheduler/apis/config/types.go) after
v1 defaulting: every optional field holds its defaulted value, so the runtime never has to
know a default. Build them with :func:`kubesched.config.parse_config` /
:func:`kubesched.config.load_config` (YAML/JSON, defaulted and validated) or
:func:`kubesched.config.default_configuration`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.features import DEFAULT_FEATURES, Features

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Plugins field name -> v1 YAML key, in upstream's Plugins struct order (MultiPoint last).
EXTENSION_POINTS: tuple[tuple[str, str], ...] = (
    ("pre_enqueue", "preEnqueue"),
    ("queue_sort", "queueSort"),
    ("pre_filter", "preFilter"),
    ("filter", "filter"),
    ("post_filter", "postFilter"),
    ("pre_score", "preScore"),
    ("score", "score"),
    ("reserve", "reserve"),
    ("permit", "permit"),
    ("pre_bind", "preBind"),
    ("bind", "bind"),
    ("post_bind", "postBind"),
    ("multi_point", "multiPoint"),
)


@dataclass(frozen=True, slots=True)
class PluginRef:
    """One enabled plugin. ``weight`` 0 means "not set": the framework uses 1 for a Score
    plugin (internal config.Plugin keeps int32 0 the same way)."""

    name: str
    weight: int = 0


@dataclass(frozen=True, slots=True)
class PluginSet:
    """Enabled plugins in call order, and the plugins disabled at this point (name ``"*"`` =
    all defaults; a disabled entry's weight means nothing). The merged set keeps ``disabled``
    because MultiPoint expansion in the framework must not re-add a plugin disabled at a
    specific point."""

    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()

    def names(self) -> tuple[str, ...]:
        """Enabled plugin names, in order."""
        return tuple(p.name for p in self.enabled)

    def disabled_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.disabled)


@dataclass(frozen=True, slots=True)
class Plugins:
    """config/v1 Plugins: the enabled and disabled plugins of each extension point."""

    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()

    def get(self, point: str) -> PluginSet:
        """The set for a field name (``"pre_filter"``) or YAML key (``"preFilter"``)."""
        for attr, key in EXTENSION_POINTS:
            if point in (attr, key):
                value: PluginSet = getattr(self, attr)
                return value
        raise KeyError(point)

    def items(self) -> Iterator[tuple[str, PluginSet]]:
        """(YAML key, set) for every extension point, MultiPoint last."""
        for attr, key in EXTENSION_POINTS:
            yield key, getattr(self, attr)


@dataclass(frozen=True, slots=True)
class Profile:
    """A scheduling profile. ``plugin_config`` maps a plugin name to its args: a typed
    ``kubesched.config.args`` value for every known ``<Name>Args`` kind (defaults appended for
    each enabled plugin that has one, as upstream), else the raw mapping as written (args of an
    out-of-tree plugin are passed through untouched, like runtime.Unknown)."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = Plugins()
    # Excluded from hashing (raw args are dicts); still compared.
    plugin_config: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # The configuration (or Policy) file it was read from, so that errors found only when the
    # profile is built (an unknown plugin, plugin args) name the file too. Not part of its value.
    file: str | None = field(default=None, compare=False, repr=False)

    def args(self, name: str) -> Any:
        """The args for plugin ``name``, or None when it has none."""
        return self.plugin_config.get(name)


@dataclass(frozen=True, slots=True)
class ExtenderManagedResource:
    """config/v1 ExtenderManagedResource: an extended resource an extender manages."""

    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderTLSConfig:
    """config/v1 ExtenderTLSConfig."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0  # extender.go: DefaultExtenderTimeout


@dataclass(frozen=True, slots=True)
class Extender:
    """An HTTP scheduler extender (config.Extender). An empty verb means the extender does not
    implement that call. ``http_timeout`` is in seconds; 0 in the file means the 5 s default
    (NewHTTPExtender), already applied here."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False
    # The configuration (or Policy) file it was read from, for errors found only when its client
    # is built (TLS files). Not part of its value.
    file: str | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        """HTTPExtender.Name(): the URL prefix, verbatim."""
        return self.url_prefix

    def is_binder(self) -> bool:
        return self.bind_verb != ""

    def is_filter(self) -> bool:
        return self.filter_verb != ""

    def is_prioritizer(self) -> bool:
        return self.prioritize_verb != ""

    def supports_preemption(self) -> bool:
        return self.preempt_verb != ""


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """component-base LeaderElectionConfiguration; durations in seconds."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """component-base ClientConnectionConfiguration with the scheduler's QPS/burst defaults."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass(frozen=True, slots=True)
class KubeSchedulerConfiguration:
    """config/v1 KubeSchedulerConfiguration, defaulted and validated."""

    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: tuple[Profile, ...] = ()
    extenders: tuple[Extender, ...] = ()
    leader_election: LeaderElection = LeaderElection()
    client_connection: ClientConnection = ClientConnection()
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False
    # The release (and --feature-gates) whose defaults filled this configuration; not a field of
    # the file (kube-scheduler takes gates on its command line).
    features: Features = DEFAULT_FEATURES

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile a pod with ``spec.schedulerName`` is scheduled by, if any."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None

    def percentage_for(self, profile: Profile) -> int:
        """percentageOfNodesToScore in effect for ``profile``: the profile's value when set,
        else the global one (schedule_one.go: numFeasibleNodesToFind)."""
        if profile.percentage_of_nodes_to_score is not None:
            return profile.percentage_of_nodes_to_score
        return self.percentage_of_nodes_to_score
