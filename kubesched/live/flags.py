"""kube-scheduler's serving and leader-election flags, for ``kubesched run``.

Use the decorators on a click command; each collapses its options into one keyword argument::

    @main.command()
    @serving_options          # -> serving: ServingOptions
    @leader_election_options  # -> leader_election_flags: LeaderElectionFlags
    def run(..., serving: ServingOptions, leader_election_flags: LeaderElectionFlags) -> None:
        cfg = load_config(...)
        le = leader_election_flags.apply(cfg.leader_election)

As in kube-scheduler (options.ApplyLeaderElectionTo), a leader-election flag overrides the
configuration file's ``leaderElection`` only when it is given on the command line. Durations
are Go durations (``15s``, ``1m``, ``500ms``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from kubesched.config._duration import parse_duration
from kubesched.config.types import KubeSchedulerConfiguration, LeaderElection
from kubesched.errors import ConfigError
from kubesched.live.leader import validate_timing
from kubesched.live.serving import DEFAULT_BIND_ADDRESS, DEFAULT_SECURE_PORT

F = TypeVar("F", bound=Callable[..., Any])


def _go_duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """Click callback: a Go duration string -> seconds (None stays None)."""
    if value is None:
        return None
    ns = parse_duration(value)
    if ns is None:
        raise click.BadParameter(f"{value!r} is not a duration (e.g. 15s, 1m30s, 500ms)", ctx, param)
    return ns / 1e9


@dataclass(frozen=True, slots=True)
class LeaderElectionFlags:
    """The ``--leader-elect*`` flags as given (None = not on the command line)."""

    leader_elect: bool | None = None
    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    resource_lock: str | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None

    def apply(self, config: LeaderElection) -> LeaderElection:
        """``config`` with the given flags applied, then checked as NewLeaderElector and the
        config validation would (ConfigError)."""
        changes = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}
        le = dataclasses.replace(config, **changes)
        if le.leader_elect:
            if le.resource_lock != "leases":
                raise ConfigError(f'leaderElection.resourceLock: Invalid value: "{le.resource_lock}": resourceLock '
                                  'value must be "leases"')
            if not le.resource_name or not le.resource_namespace:
                raise ConfigError("leaderElection.resourceName and resourceNamespace are required")
            validate_timing(le.lease_duration, le.renew_deadline, le.retry_period)
        return le


@dataclass(frozen=True, slots=True)
class ServingOptions:
    """``--bind-address``, ``--secure-port`` (0 = no serving), ``--tls-cert-file``/``--tls-private-key-file``
    or ``--cert-dir``, ``--tls-min-version``, ``--tls-cipher-suites``, ``--permit-port-sharing`` and
    the metrics ``--disabled-metrics`` (kube-scheduler's SecureServingOptions and metrics Options)."""

    bind_address: str = DEFAULT_BIND_ADDRESS
    secure_port: int = DEFAULT_SECURE_PORT
    cert_file: str | None = None
    key_file: str | None = None
    cert_dir: str | None = None
    tls_min_version: str = ""  # cliflag.TLSVersion's name; "" = Go's server default, TLS 1.2
    cipher_suites: tuple[str, ...] = ()  # Go's names
    permit_port_sharing: bool = False
    disabled_metrics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.secure_port <= 65535:
            raise ConfigError(f"--secure-port {self.secure_port} must be between 0 and 65535, inclusive. 0 for "
                              "turning off secure port")
        if bool(self.cert_file) != bool(self.key_file):
            raise ConfigError("--tls-cert-file and --tls-private-key-file must be given together")

    @property
    def enabled(self) -> bool:
        return self.secure_port != 0

    @property
    def tls(self) -> bool:
        """Whether HTTPS is served: a certificate given, or --cert-dir (MaybeDefaultWithSelfSignedCerts)."""
        return bool(self.cert_file or self.cert_dir)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def certificate(self) -> tuple[str | None, str | None]:
        """The certificate and key files to serve: --tls-cert-file/--tls-private-key-file, else
        ``<cert-dir>/kube-scheduler.crt`` and ``.key`` (generated, self-signed, when they cannot be
        read: SecureServingOptions.MaybeDefaultWithSelfSignedCerts with kube-scheduler's PairName),
        else none (plain HTTP)."""
        if self.cert_file or not self.cert_dir or not self.enabled:
            return self.cert_file, self.key_file
        from kubesched.live.serving import self_signed_pair

        return self_signed_pair(self.cert_dir, "kube-scheduler", self.bind_address)


@dataclass(frozen=True, slots=True)
class DeprecatedFlags:
    """kube-scheduler's deprecated configuration flags (deprecated.go) as given (None = not on the
    command line). :meth:`apply` is options.go ApplyDeprecated: the caller applies them only when
    no ``--config`` is given, as ApplyTo does."""

    profiling: bool | None = None
    contention_profiling: bool | None = None
    kubeconfig: str | None = None
    content_type: str | None = None
    qps: float | None = None
    burst: int | None = None

    def apply(self, config: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
        cc = config.client_connection
        cc = dataclasses.replace(
            cc, kubeconfig=cc.kubeconfig if self.kubeconfig is None else self.kubeconfig,
            content_type=cc.content_type if self.content_type is None else self.content_type,
            qps=cc.qps if self.qps is None else self.qps, burst=cc.burst if self.burst is None else self.burst)
        changes: dict[str, Any] = {"client_connection": cc}
        if self.profiling is not None:
            changes["enable_profiling"] = self.profiling
        if self.contention_profiling is not None:
            changes["enable_contention_profiling"] = self.contention_profiling
        return dataclasses.replace(config, **changes)


_EXISTING_FILE = click.Path(exists=True, dir_okay=False)  # made once: click.Path() reads gettext's catalogs

_LE_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--leader-elect", "le_leader_elect"),
     {"type": click.BOOL, "is_flag": False, "flag_value": True, "default": None, "metavar": "[true|false]",
      "help": "Start a leader election client and gain leadership before executing the main loop. Enable this "
              "when running replicated components for high availability. [default: true]"}),
    (("--leader-elect-lease-duration", "le_lease_duration"),
     {"callback": _go_duration, "default": None, "metavar": "DURATION",
      "help": "The duration that non-leader candidates will wait after observing a leadership renewal until "
              "attempting to acquire leadership of a led but unrenewed leader slot. [default: 15s]"}),
    (("--leader-elect-renew-deadline", "le_renew_deadline"),
     {"callback": _go_duration, "default": None, "metavar": "DURATION",
      "help": "The interval between attempts by the acting master to renew a leadership slot before it stops "
              "leading. This must be less than the lease duration. [default: 10s]"}),
    (("--leader-elect-retry-period", "le_retry_period"),
     {"callback": _go_duration, "default": None, "metavar": "DURATION",
      "help": "The duration the clients should wait between attempting acquisition and renewal of a leadership. "
              "[default: 2s]"}),
    (("--leader-elect-resource-lock", "le_resource_lock"),
     {"default": None, "help": "The type of resource object that is used for locking during leader election. "
                               "Supported option is 'leases'. [default: leases]"}),
    (("--leader-elect-resource-name", "le_resource_name"),
     {"default": None, "help": "The name of resource object that is used for locking during leader election. "
                               "[default: kube-scheduler]"}),
    (("--leader-elect-resource-namespace", "le_resource_namespace"),
     {"default": None, "help": "The namespace of resource object that is used for locking during leader "
                               "election. [default: kube-system]"}),
)


def leader_election_options(fn: F) -> F:
    """Add kube-scheduler's ``--leader-elect*`` flags; the command receives ``leader_election_flags``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        flags = LeaderElectionFlags(**{name[3:]: kwargs.pop(name) for (*_, name), _ in _LE_OPTIONS})
        return fn(*args, leader_election_flags=flags, **kwargs)

    decorated: Any = wrapper
    for decls, attrs in reversed(_LE_OPTIONS):
        decorated = click.option(*decls, **attrs)(decorated)
    return decorated  # type: ignore[no-any-return]


def serving_options(fn: F) -> F:
    """Add ``--bind-address``, ``--secure-port``, ``--tls-cert-file`` (``--cert``) and
    ``--tls-private-key-file`` (``--key``); the command receives ``serving``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            serving = ServingOptions(
                bind_address=kwargs.pop("sv_bind_address"), secure_port=kwargs.pop("sv_secure_port"),
                cert_file=kwargs.pop("sv_cert_file"), key_file=kwargs.pop("sv_key_file"),
            )
        except ConfigError as e:
            raise click.UsageError(str(e)) from None
        return fn(*args, serving=serving, **kwargs)

    decorated: Any = wrapper
    decorated = click.option(
        "--tls-private-key-file", "--key", "sv_key_file", type=_EXISTING_FILE, default=None,
        help="Private key matching --tls-cert-file.")(decorated)
    decorated = click.option(
        "--tls-cert-file", "--cert", "sv_cert_file", type=_EXISTING_FILE, default=None,
        help="Serve HTTPS with this certificate. Without it kubesched serves plain HTTP on --secure-port "
             "(kube-scheduler would generate a self-signed certificate).")(decorated)
    decorated = click.option(
        "--secure-port", "sv_secure_port", type=click.IntRange(0, 65535), default=DEFAULT_SECURE_PORT,
        show_default=True,
        help="The port on which to serve /healthz, /livez, /readyz and /metrics. 0 disables serving.")(decorated)
    decorated = click.option(
        "--bind-address", "sv_bind_address", default=DEFAULT_BIND_ADDRESS, show_default=True,
        help="The IP address on which to listen for the --secure-port port (0.0.0.0 for all IPv4 interfaces, "
             ":: for all IPv6 interfaces). Unlike kube-scheduler (0.0.0.0), the default is loopback only: "
             "kubesched's endpoints do not authenticate requests.")(decorated)
    return decorated  # type: ignore[no-any-return]
