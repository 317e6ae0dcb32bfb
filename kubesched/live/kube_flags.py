"""kube-scheduler's whole command line, as data, for ``kubesched run``.

:data:`KUBE_SCHEDULER_FLAGS` lists every flag ``kube-scheduler --help`` prints, in its named flag
sets ("Misc", "Secure serving", ..., "Global"), with its pflag type, its default as the help
shows it, the releases that have it and what kubesched does with it:

- ``config``: mapped into the KubeSchedulerConfiguration exactly where kube-scheduler puts it
  (options.go ApplyDeprecated / ApplyLeaderElectionTo), visible in ``--write-config-to``;
- ``honoured``: kubesched does what kube-scheduler does with it (serving, logging, the queue...);
- ``warn``: accepted (and its value checked as pflag checks it), but kubesched cannot do what it
  asks: one warning line naming it, on stderr.

Sources (the specification): kube-scheduler 1.36.2 as vendored by openshift/microshift (main),
1.30.1 as vendored by its release-4.17 branch: cmd/kube-scheduler/app/options/{options.go,
deprecated.go}, app/server.go, k8s.io/apiserver/pkg/server/options/{serving.go,
authentication.go,authorization.go}, component-base config/options/leaderelectionconfig.go,
compatibility/registry.go (1.36) / featuregate (1.30), metrics/options.go, logs/api/v1/options.go,
cli/globalflag and version/verflag. OpenShift's own ``--unsupported-kube-api-over-localhost``
is not upstream's and is not listed.

The click wiring is generated from the table: every flag is one :class:`KubeFlagOption` taking
its raw text; :class:`KubeSchedulerCommand` rewrites pflag's syntax (``--bool`` alone,
``-v3`` / ``-v=3``) into click's before parsing, rejects unknown flags as pflag does
(``unknown flag: --x``) and prints ``--help`` in kube-scheduler's sections. The command receives
one :class:`KubeSchedulerFlags` holding the parsed values; a flag of the release not chosen by
``--kube-version`` is an unknown flag.
"""

from __future__ import annotations

import csv
import functools
import ipaddress
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click
from click.core import ParameterSource

from kubesched.config._duration import parse_duration
from kubesched.errors import ConfigError
from kubesched.features import SUPPORTED_VERSIONS, V1_30, V1_36, KubeVersion
from kubesched.live.flags import DeprecatedFlags, LeaderElectionFlags, ServingOptions

if TYPE_CHECKING:
    from kubesched.live.command import RunOptions

F = TypeVar("F", bound=Callable[..., Any])

Handling = Literal["config", "honoured", "warn"]

#: kube-scheduler's named flag sets, in the order ``--help`` prints them (options.go initFlags,
#: then server.go's "global").
GROUPS: tuple[str, ...] = ("misc", "secure serving", "authentication", "authorization", "deprecated",
                           "leader election", "feature gate", "metrics", "logs", "global")
#: kubesched's own flags of ``kubesched run`` (not kube-scheduler's).
KUBESCHED_GROUP = "kubesched"

# pflag value types whose flag may be repeated, each occurrence adding to the list.
_LIST_KINDS = frozenset({"strings", "int32Slice", "stringToString", "namedCertKey", "mapStringBool",
                         "colonSeparatedMultimapStringString"})
# pflag types with NoOptDefVal "true": ``--flag`` alone means ``--flag=true``.
_NO_VALUE_KINDS = frozenset({"bool", "version"})


@dataclass(frozen=True, slots=True)
class KubeFlag:
    """One flag of ``kube-scheduler --help``."""

    name: str
    kind: str  # the pflag type name --help prints (bool, int, int32, float32, duration, strings, ...)
    group: str
    handling: Handling
    help: str
    default: str = ""  # as kube-scheduler's --help shows it, lists without brackets ("" = none shown)
    since: KubeVersion = V1_30  # the first supported release that has the flag
    until: KubeVersion | None = None  # the first supported release that no longer has it
    config_path: str = ""  # handling "config": the configuration field it sets
    only_without_config: bool = False  # ApplyDeprecated: ignored when --config is given
    shorthand: str = ""
    kubesched_default: str | None = None  # where kubesched's default differs (documented)
    aliases: tuple[str, ...] = ()  # kubesched's older spellings (--cert, --key)
    note: str = ""  # why kubesched does not honour it (handling "warn") or how it does

    def in_release(self, version: KubeVersion) -> bool:
        return self.since <= version and (self.until is None or version < self.until)

    @property
    def param(self) -> str:
        return "kf_" + self.name.replace("-", "_")

    @property
    def spelled(self) -> str:
        """How pflag names the flag in its errors: ``--name`` or ``-v, --v``."""
        return f"-{self.shorthand}, --{self.name}" if self.shorthand else f"--{self.name}"


_NO_AUTH = ("kubesched's endpoints do not authenticate or authorize requests (no TokenReview / "
            "SubjectAccessReview): keep --bind-address on a trusted network")
_HTTP11 = "kubesched serves HTTP/1.1 only"


def _f(name: str, kind: str, group: str, handling: Handling, help: str, **kw: Any) -> KubeFlag:
    return KubeFlag(name, kind, group, handling, help, **kw)


KUBE_SCHEDULER_FLAGS: tuple[KubeFlag, ...] = (
    # ------------------------------------------------------------------ misc (options.go initFlags)
    _f("config", "string", "misc", "honoured", "The path to the configuration file.",
       note="without it, the --kube-version release's defaults (one profile, default-scheduler)"),
    _f("master", "string", "misc", "honoured",
       "The address of the Kubernetes API server (overrides any value in kubeconfig)",
       note="with no kubeconfig at all, kubesched connects to it without credentials (a local test server)"),
    _f("write-config-to", "string", "misc", "honoured",
       "If set, write the configuration values to this file and exit.",
       note='writes the effective configuration (flags applied, defaults filled, profiles built) and exits 0 before connecting to anything'),
    # ---------------------------------------------------- secure serving (apiserver serving.go)
    _f("bind-address", "ip", "secure serving", "honoured",
       "The IP address on which to listen for the --secure-port port. If blank or an unspecified address "
       "(0.0.0.0 or ::), all interfaces and IP address families will be used. Unlike kube-scheduler "
       "(0.0.0.0), the default is loopback only: kubesched's endpoints do not authenticate requests.",
       default="0.0.0.0", kubesched_default="127.0.0.1",
       note="**difference from kube-scheduler**, whose default is 0.0.0.0: kubesched's endpoints are "
            "unauthenticated, so by default only the local host reaches them; the Deployment passes 0.0.0.0 "
            "because the kubelet probes the pod IP"),
    _f("cert-dir", "string", "secure serving", "honoured",
       "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are "
       "provided, this flag will be ignored. kubesched serves HTTPS with kube-scheduler.crt/.key there, "
       "generating a self-signed pair when absent.",
       note="without it (and without --tls-cert-file) kubesched serves plain HTTP, where kube-scheduler "
            "generates an in-memory self-signed certificate"),
    _f("disable-http2-serving", "bool", "secure serving", "honoured",
       "If true, HTTP2 serving will be disabled [default=false]", since=V1_36,
       note=f"{_HTTP11}: HTTP/2 is never served"),
    _f("http2-max-streams-per-connection", "int", "secure serving", "warn",
       "The limit that the server gives to clients for the maximum number of streams in an HTTP/2 "
       "connection. Zero means to use golang's default.", note=_HTTP11),
    _f("permit-address-sharing", "bool", "secure serving", "honoured",
       "If true, SO_REUSEADDR will be used when binding the port. [default=false]",
       note="kubesched always binds with SO_REUSEADDR"),
    _f("permit-port-sharing", "bool", "secure serving", "honoured",
       "If true, SO_REUSEPORT will be used when binding the port, which allows more than one instance to "
       "bind on the same address and port. [default=false]",
       note='SO_REUSEPORT on the serving socket'),
    _f("secure-port", "int", "secure serving", "honoured",
       "The port on which to serve HTTPS with authentication and authorization (kubesched: /healthz, "
       "/livez, /readyz and /metrics). If 0, don't serve HTTPS at all.", default="10259",
       note='serves /healthz, /livez, /readyz and /metrics; 0 turns serving off'),
    _f("tls-cert-file", "string", "secure serving", "honoured",
       "File containing the default x509 Certificate for HTTPS. (CA cert, if any, concatenated after server "
       "cert). Without it (and without --cert-dir) kubesched serves plain HTTP on --secure-port "
       "(kube-scheduler would generate a self-signed certificate).", aliases=("--cert",),
       note='serves HTTPS with this certificate and --tls-private-key-file'),
    _f("tls-cipher-suites", "strings", "secure serving", "honoured",
       "Comma-separated list of cipher suites for the server (Go's names, e.g. "
       "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256). If omitted, the default cipher suites will be used.",
       note="Go's names, served as OpenSSL's; TLS 1.3 suites are not configurable, as in Go; HTTPS only"),
    _f("tls-curve-preferences", "int32Slice", "secure serving", "warn",
       "Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key exchange "
       "mechanisms for the server.", since=V1_36,
       note="Python's ssl module cannot restrict the key exchange groups to a list"),
    _f("tls-min-version", "string", "secure serving", "honoured",
       "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, "
       "VersionTLS13",
       note="default TLS 1.2, Go's server default; HTTPS only"),
    _f("tls-private-key-file", "string", "secure serving", "honoured",
       "File containing the default x509 private key matching --tls-cert-file.", aliases=("--key",),
       note='the key of --tls-cert-file'),
    _f("tls-sni-cert-key", "namedCertKey", "secure serving", "warn",
       "A pair of x509 certificate and private key file paths, optionally suffixed with a list of domain "
       "patterns which are fully qualified domain names, possibly with prefixed wildcard segments. "
       "Examples: \"example.crt,example.key\" or \"foo.crt,foo.key:*.foo.com,foo.com\".",
       note="kubesched serves the one certificate of --tls-cert-file (no SNI certificates)"),
    # -------------------------------------------------- authentication (apiserver authentication.go)
    _f("authentication-kubeconfig", "string", "authentication", "warn",
       "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
       "tokenreviews.authentication.k8s.io. This is optional.", note=_NO_AUTH),
    _f("authentication-skip-lookup", "bool", "authentication", "warn",
       "If false, the authentication-kubeconfig will be used to lookup missing authentication "
       "configuration from the cluster.", note=_NO_AUTH),
    _f("authentication-token-webhook-cache-ttl", "duration", "authentication", "warn",
       "The duration to cache responses from the webhook token authenticator.", default="10s", note=_NO_AUTH),
    _f("authentication-tolerate-lookup-failure", "bool", "authentication", "warn",
       "If true, failures to look up missing authentication configuration from the cluster are not "
       "considered fatal.", default="true", note=_NO_AUTH),
    _f("client-ca-file", "string", "authentication", "warn",
       "If set, any request presenting a client certificate signed by one of the authorities in the "
       "client-ca-file is authenticated with an identity corresponding to the CommonName of the client "
       "certificate.", note=_NO_AUTH),
    _f("requestheader-allowed-names", "strings", "authentication", "warn",
       "List of client certificate common names to allow to provide usernames in headers specified by "
       "--requestheader-username-headers.", note=_NO_AUTH),
    _f("requestheader-client-ca-file", "string", "authentication", "warn",
       "Root certificate bundle to use to verify client certificates on incoming requests before trusting "
       "usernames in headers specified by --requestheader-username-headers.", note=_NO_AUTH),
    _f("requestheader-extra-headers-prefix", "strings", "authentication", "warn",
       "List of request header prefixes to inspect. X-Remote-Extra- is suggested.",
       default="x-remote-extra-", note=_NO_AUTH),
    _f("requestheader-group-headers", "strings", "authentication", "warn",
       "List of request headers to inspect for groups. X-Remote-Group is suggested.",
       default="x-remote-group", note=_NO_AUTH),
    _f("requestheader-uid-headers", "strings", "authentication", "warn",
       "List of request headers to inspect for UIDs. X-Remote-Uid is suggested.", since=V1_36, note=_NO_AUTH),
    _f("requestheader-username-headers", "strings", "authentication", "warn",
       "List of request headers to inspect for usernames. X-Remote-User is common.",
       default="x-remote-user", note=_NO_AUTH),
    # ---------------------------------------------------- authorization (apiserver authorization.go)
    _f("authorization-always-allow-paths", "strings", "authorization", "warn",
       "A list of HTTP paths to skip during authorization, i.e. these are authorized without contacting "
       "the 'core' kubernetes server.", default="/healthz,/readyz,/livez", note=_NO_AUTH),
    _f("authorization-kubeconfig", "string", "authorization", "warn",
       "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
       "subjectaccessreviews.authorization.k8s.io. This is optional.", note=_NO_AUTH),
    _f("authorization-webhook-cache-authorized-ttl", "duration", "authorization", "warn",
       "The duration to cache 'authorized' responses from the webhook authorizer.", default="10s",
       note=_NO_AUTH),
    _f("authorization-webhook-cache-unauthorized-ttl", "duration", "authorization", "warn",
       "The duration to cache 'unauthorized' responses from the webhook authorizer.", default="10s",
       note=_NO_AUTH),
    # ----------------------------------------------------------------- deprecated (deprecated.go)
    _f("contention-profiling", "bool", "deprecated", "config",
       "DEPRECATED: enable block profiling, if profiling is enabled. This parameter is ignored if a config "
       "file is specified in --config.", default="true", config_path="enableContentionProfiling",
       only_without_config=True),
    _f("kube-api-burst", "int32", "deprecated", "config",
       "DEPRECATED: burst to use while talking with kubernetes apiserver. This parameter is ignored if a "
       "config file is specified in --config.", default="100", config_path="clientConnection.burst",
       only_without_config=True),
    _f("kube-api-content-type", "string", "deprecated", "config",
       "DEPRECATED: content type of requests sent to apiserver. This parameter is ignored if a config file "
       "is specified in --config.", default="application/vnd.kubernetes.protobuf",
       config_path="clientConnection.contentType", only_without_config=True),
    _f("kube-api-qps", "float32", "deprecated", "config",
       "DEPRECATED: QPS to use while talking with kubernetes apiserver. This parameter is ignored if a "
       "config file is specified in --config.", default="50", config_path="clientConnection.qps",
       only_without_config=True),
    _f("kubeconfig", "string", "deprecated", "config",
       "DEPRECATED: path to kubeconfig file with authorization and master location information. This "
       "parameter is ignored if a config file is specified in --config.",
       config_path="clientConnection.kubeconfig", only_without_config=True,
       note="without a kubeconfig: $KUBECONFIG, else the in-cluster service account, else ~/.kube/config"),
    _f("pod-max-in-unschedulable-pods-duration", "duration", "deprecated", "honoured",
       "DEPRECATED: the maximum time a pod can stay in unschedulablePods. If a pod stays in "
       "unschedulablePods for longer than this value, the pod will be moved from unschedulablePods to "
       "backoffQ or activeQ. This flag is deprecated and will be removed in a future version.",
       default="5m0s",
       note="the live queue's unschedulable timeout; applied with --config too, as upstream"),
    _f("profiling", "bool", "deprecated", "config",
       "DEPRECATED: enable profiling via web interface host:port/debug/pprof/. This parameter is ignored if "
       "a config file is specified in --config.", default="true", config_path="enableProfiling",
       only_without_config=True),
    # ---------------------------------------- leader election (component-base leaderelectionconfig.go)
    _f("leader-elect", "bool", "leader election", "config",
       "Start a leader election client and gain leadership before executing the main loop. Enable this "
       "when running replicated components for high availability.", default="true",
       config_path="leaderElection.leaderElect"),
    _f("leader-elect-lease-duration", "duration", "leader election", "config",
       "The duration that non-leader candidates will wait after observing a leadership renewal until "
       "attempting to acquire leadership of a led but unrenewed leader slot. This is only applicable if "
       "leader election is enabled.", default="15s", config_path="leaderElection.leaseDuration"),
    _f("leader-elect-renew-deadline", "duration", "leader election", "config",
       "The interval between attempts by the acting master to renew a leadership slot before it stops "
       "leading. This must be less than the lease duration. This is only applicable if leader election "
       "is enabled.", default="10s", config_path="leaderElection.renewDeadline"),
    _f("leader-elect-resource-lock", "string", "leader election", "config",
       "The type of resource object that is used for locking during leader election. Supported options "
       "are 'leases'.", default="leases", config_path="leaderElection.resourceLock"),
    _f("leader-elect-resource-name", "string", "leader election", "config",
       "The name of resource object that is used for locking during leader election.",
       default="kube-scheduler", config_path="leaderElection.resourceName"),
    _f("leader-elect-resource-namespace", "string", "leader election", "config",
       "The namespace of resource object that is used for locking during leader election.",
       default="kube-system", config_path="leaderElection.resourceNamespace"),
    _f("leader-elect-retry-period", "duration", "leader election", "config",
       "The duration the clients should wait between attempting acquisition and renewal of a leadership. "
       "This is only applicable if leader election is enabled.", default="2s",
       config_path="leaderElection.retryPeriod"),
    # ----------------------- feature gate (1.30: featuregate AddFlag; 1.36: compatibility registry)
    _f("emulated-version", "strings", "feature gate", "warn",
       "The versions different components emulate their capabilities (APIs, features, ...) of. Version "
       "format could only be major.minor, for example: '--emulated-version=wardle=1.2,kube=1.31'. If the "
       "component is not specified, defaults to \"kube\"", since=V1_36,
       note="kubesched decides as the release --kube-version names and emulates no other"),
    _f("feature-gates", "mapStringBool", "feature gate", "honoured",
       "A set of key=value pairs that describe feature gates for alpha/experimental features (the gates of "
       "the --kube-version release kubesched decides by).", until=V1_36,
       note="the scheduler's gates of the --kube-version release"),
    _f("feature-gates", "colonSeparatedMultimapStringString", "feature gate", "honoured",
       "Comma-separated list of component:key=value pairs that describe feature gates for "
       "alpha/experimental features of different components. If the component is not specified, defaults "
       "to \"kube\". This flag can be repeatedly invoked.", since=V1_36,
       note="the scheduler's gates of the --kube-version release; component kube only"),
    _f("min-compatibility-version", "strings", "feature gate", "warn",
       "The min version of control plane components the server should be compatible with. Must be less or "
       "equal to the emulated-version. Version format could only be major.minor.", since=V1_36,
       note="kubesched has no compatibility-versioned behaviour"),
    # -------------------------------------------------------- metrics (component-base metrics/options.go)
    _f("allow-metric-labels", "stringToString", "metrics", "warn",
       "The map from metric-label to value allow-list of this label. The key's format is "
       "<MetricName>,<LabelName>. The value's format is <allowed_value>,<allowed_value>...",
       note="kubesched's metric labels are bounded by construction; no allow-list is applied"),
    _f("allow-metric-labels-manifest", "string", "metrics", "warn",
       "The path to the manifest file that contains the allow-list mapping. The format of the file is the "
       "same as the flag --allow-metric-labels.",
       note="kubesched's metric labels are bounded by construction; no allow-list is applied"),
    _f("disabled-metrics", "strings", "metrics", "honoured",
       "This flag provides an escape hatch for misbehaving metrics. You must provide the fully qualified "
       "metric name in order to disable it.",
       note='left out of /metrics'),
    _f("show-hidden-metrics-for-version", "string", "metrics", "honoured",
       "The previous version for which you want to show hidden metrics. Only the previous minor version is "
       "meaningful, other values will not be allowed. The format is <major>.<minor>, e.g.: '1.16'.",
       note="validated as kube-scheduler does; kubesched hides no metric"),
    # ----------------------------------------------------------- logs (component-base logs/api/v1)
    _f("log-flush-frequency", "duration", "logs", "honoured", "Maximum number of seconds between log flushes",
       default="5s", note="kubesched writes every log line at once"),
    _f("log-json-info-buffer-size", "quantity", "logs", "warn",
       "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to "
       "increase performance.", default="0", note="kubesched writes one unbuffered stream"),
    _f("log-json-split-stream", "bool", "logs", "warn",
       "[Alpha] In JSON format, write error messages to stderr and info messages to stdout.",
       note="kubesched writes one stream, stderr"),
    _f("log-text-info-buffer-size", "quantity", "logs", "warn",
       "[Alpha] In text format with split output streams, the info messages can be buffered for a while to "
       "increase performance.", default="0", note="kubesched writes one unbuffered stream"),
    _f("log-text-split-stream", "bool", "logs", "warn",
       "[Alpha] In text format, write error messages to stderr and info messages to stdout.",
       note="kubesched writes one stream, stderr"),
    _f("logging-format", "string", "logs", "honoured",
       "Sets the log format. Permitted formats: \"json\", \"text\".", default="text",
       note="text, or json lines with klog's fields (ts, caller, msg, v)"),
    _f("v", "Level", "logs", "honoured",
       "number for the log level verbosity (kubesched: 0 logs info, warnings and errors, as klog's default; "
       "4 and above debug)", default="0", shorthand="v",
       note="no log line shows a token, a client key or an Authorization header, as client-go masks them"),
    _f("vmodule", "pattern=N,...", "logs", "warn",
       "comma-separated list of pattern=N settings for file-filtered logging (only works for text log "
       "format)", note="kubesched's log levels are not set per Go source file"),
    # ------------------------------------------------------ global (verflag, globalflag)
    _f("version", "version", "global", "honoured",
       "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the "
       "reported version", default="false",
       note="prints kubesched's version and the kube-scheduler release it decides as, exits 0"),
)

ALL_FLAG_NAMES: frozenset[str] = frozenset(f.name for f in KUBE_SCHEDULER_FLAGS)


def flags_of(version: KubeVersion) -> tuple[KubeFlag, ...]:
    """The flags ``kube-scheduler --help`` of ``version`` lists."""
    return tuple(f for f in KUBE_SCHEDULER_FLAGS if f.in_release(version))


def _row(name: str, version: KubeVersion) -> KubeFlag | None:
    for f in KUBE_SCHEDULER_FLAGS:
        if f.name == name and f.in_release(version):
            return f
    return None


def _releases(name: str) -> list[str]:
    """The supported releases whose kube-scheduler has the flag."""
    return [str(v) for v in SUPPORTED_VERSIONS if _row(name, v) is not None]


def _any_row(name: str) -> KubeFlag:
    """The newest release's row of ``name`` (for the click option: help text, kind)."""
    rows = [f for f in KUBE_SCHEDULER_FLAGS if f.name == name]
    return max(rows, key=lambda f: f.since)


# ====================================================================== pflag values
class FlagValueError(ConfigError):
    """A flag's value pflag would refuse (``invalid argument "x" for "--f" flag: ...``)."""


def _invalid(flag: KubeFlag, value: str, why: str) -> FlagValueError:
    return FlagValueError(f'invalid argument "{value}" for "{flag.spelled}" flag: {why}')


_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _go_bool(flag: KubeFlag, text: str) -> bool:
    """strconv.ParseBool."""
    if text not in _GO_BOOLS:
        raise _invalid(flag, text, f'strconv.ParseBool: parsing "{text}": invalid syntax')
    return _GO_BOOLS[text]


def _go_int(flag: KubeFlag, text: str, bits: int, fn: str = "strconv.ParseInt", base: int = 0,
            unsigned: bool = False) -> int:
    """strconv.ParseInt(text, base, bits) (ParseUint when ``unsigned``)."""
    try:
        value = int(text, base)
    except ValueError:
        raise _invalid(flag, text, f'{fn}: parsing "{text}": invalid syntax') from None
    low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if unsigned and value < 0:
        raise _invalid(flag, text, f'{fn}: parsing "{text}": invalid syntax')
    if not low <= value <= high:
        raise _invalid(flag, text, f'{fn}: parsing "{text}": value out of range')
    return value


def _go_float32(flag: KubeFlag, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _invalid(flag, text, f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None


def _go_duration(flag: KubeFlag, text: str) -> float:
    """time.ParseDuration -> seconds."""
    ns = parse_duration(text)
    if ns is None:
        raise _invalid(flag, text, f'time: invalid duration "{text}"')
    return ns / 1e9


def _csv(flag: KubeFlag, text: str) -> list[str]:
    """pflag's readAsCSV (encoding/csv, one record)."""
    if text == "":
        return []
    try:
        rows = list(csv.reader([text], strict=True))
    except csv.Error as e:
        raise _invalid(flag, text, str(e)) from None
    return rows[0] if rows else []


_QUANTITY = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?")


def parse_value(flag: KubeFlag, texts: Sequence[str]) -> Any:
    """The flag's value from its occurrences on the command line (one for a scalar flag: the last
    one given; every one for a list flag), as pflag's Value.Set would read them."""
    kind = flag.kind
    if kind in _LIST_KINDS:
        out: list[Any] = []
        for text in texts:
            out.extend(_list_items(flag, text))
        return tuple(out)
    text = texts[-1]
    if kind == "string":
        return text
    if kind == "bool":
        return _go_bool(flag, text)
    if kind == "int":
        return _go_int(flag, text, 64)
    if kind == "int32":
        return _go_int(flag, text, 32)
    if kind == "float32":
        return _go_float32(flag, text)
    if kind == "duration":
        return _go_duration(flag, text)
    if kind == "ip":
        try:
            return str(ipaddress.ip_address(text.strip()))
        except ValueError:
            raise FlagValueError(f'invalid argument "{text}" for "{flag.spelled}" flag: failed to parse IP: '
                                 f'"{text}"') from None
    if kind == "Level":
        return _go_int(flag, text, 31, "strconv.ParseUint", 10, unsigned=True)
    if kind == "pattern=N,...":
        for pattern in filter(None, text.split(",")):
            name, sep, level = pattern.partition("=")
            if not sep or not name:
                raise _invalid(flag, text, f'"{pattern}" does not have the pattern=N format')
            _go_int(flag, level, 31, "strconv.ParseUint", 10, unsigned=True)
        return text
    if kind == "quantity":
        if _QUANTITY.fullmatch(text.strip()) is None:
            raise _invalid(flag, text, "quantities must match the regular expression "
                                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        return text.strip()
    if kind == "version":
        if text == "raw":
            return "raw"
        if text.startswith("v") and re.fullmatch(r"v\d+\.\d+\.\d+\S*", text):
            return text
        return "true" if _go_bool(flag, text) else "false"
    raise AssertionError(f"unknown flag kind {kind}")


def _list_items(flag: KubeFlag, text: str) -> list[Any]:
    kind = flag.kind
    if kind == "strings":
        return _csv(flag, text)
    if kind == "int32Slice":
        return [_go_int(flag, item.strip(), 32) for item in _csv(flag, text)]
    if kind == "stringToString":
        # pflag stringToString.Set: one "=" makes the whole text one pair (its key may hold commas,
        # as --allow-metric-labels' "metric,label=..." does); more are read as CSV.
        if text.count("=") == 0:
            raise _invalid(flag, text, f"{text} must be formatted as key=value")
        pairs = [text.strip('"')] if text.count("=") == 1 else _csv(flag, text)
        items = []
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise _invalid(flag, text, f"{pair} must be formatted as key=value")
            items.append((key, value))
        return items
    if kind == "namedCertKey":
        # cliflag.NamedCertKey.Set: "cert,key" optionally followed by ":name,name".
        files, _, names = text.partition(":")
        cert_key = [s.strip() for s in files.split(",")]
        if len(cert_key) != 2 or not all(cert_key):
            raise _invalid(flag, text, "expected comma separated certificate and key file paths")
        return [(cert_key[0], cert_key[1], tuple(n.strip() for n in names.split(",") if n.strip()))]
    # feature gates: kept as written, features_for reads them.
    return [text]


# =============================================================== the parsed command line
@dataclass(frozen=True, slots=True)
class KubeSchedulerFlags:
    """kube-scheduler's flags as ``kubesched run`` was given them, for one release.

    ``given`` holds the flags on the command line (pflag's ``Changed``) with their parsed value;
    :meth:`value` falls back on the default (kubesched's where it documents a different one)."""

    version: KubeVersion
    given: Mapping[str, Any] = field(default_factory=dict)

    def changed(self, name: str) -> bool:
        return name in self.given

    def value(self, name: str) -> Any:
        if name in self.given:
            return self.given[name]
        row = _row(name, self.version)
        if row is None:
            raise KeyError(f"kube-scheduler {self.version} has no flag --{name}")
        default = row.kubesched_default if row.kubesched_default is not None else row.default
        if row.kind in _LIST_KINDS:
            return parse_value(row, [default]) if default else ()
        if default == "" and row.kind != "string":
            return None
        return parse_value(row, [default])

    @classmethod
    def parse(cls, version: KubeVersion, raw: Mapping[str, Sequence[str]]) -> KubeSchedulerFlags:
        """``raw``: flag name -> its texts on the command line, in order. A flag ``version``'s
        kube-scheduler does not have is refused as pflag refuses an unknown flag."""
        given: dict[str, Any] = {}
        for name, texts in raw.items():
            row = _row(name, version)
            if row is None:
                raise FlagValueError(f"unknown flag: --{name}")
            given[name] = parse_value(row, texts)
        return cls(version, given)

    def warnings(self) -> list[str]:
        """One line per flag given that kubesched accepts but cannot honour (handling ``warn``),
        in the table's order, then the TLS flags that have no effect on plain HTTP and the
        deprecated flags ``--config`` makes kube-scheduler ignore."""
        out = []
        for row in flags_of(self.version):
            if row.handling == "warn" and self.changed(row.name):
                out.append(f"flag --{row.name} is accepted but not honoured: {row.note}")
        out += self.serving_warnings()
        out += self.ignored_for_config(bool(self.value("config")))
        return out

    def ignored_for_config(self, config_given: bool) -> list[str]:
        """The deprecated flags given that kube-scheduler ignores because ``--config`` is given
        (ApplyTo calls ApplyDeprecated only without it), one warning line each."""
        if not config_given:
            return []
        return [f"flag --{row.name} is ignored because --config is given (as kube-scheduler does): set "
                f"{row.config_path} in the configuration file instead"
                for row in flags_of(self.version) if row.only_without_config and self.changed(row.name)]

    def serving_warnings(self) -> list[str]:
        """The TLS flags given while kubesched serves plain HTTP (no certificate, no --cert-dir)."""
        if self.value("tls-cert-file") or self.value("cert-dir") or self.value("secure-port") == 0:
            return []
        return [f"flag --{name} has no effect: kubesched serves plain HTTP without --tls-cert-file or --cert-dir"
                for name in ("tls-min-version", "tls-cipher-suites") if self.changed(name)]

    def serving(self) -> ServingOptions:
        """The serving and metrics flags (SecureServingOptions, metrics Options)."""
        return ServingOptions(
            bind_address=self.value("bind-address"), secure_port=self.value("secure-port"),
            cert_file=self.value("tls-cert-file") or None, key_file=self.value("tls-private-key-file") or None,
            cert_dir=self.value("cert-dir") or None, tls_min_version=self.value("tls-min-version"),
            cipher_suites=tuple(self.value("tls-cipher-suites")),
            permit_port_sharing=self.value("permit-port-sharing"),
            disabled_metrics=tuple(self.value("disabled-metrics")))

    def leader_election(self) -> LeaderElectionFlags:
        """The ``--leader-elect*`` flags given (ApplyLeaderElectionTo applies only those)."""
        def given(name: str) -> Any:
            return self.given.get(name)

        return LeaderElectionFlags(
            leader_elect=given("leader-elect"), lease_duration=given("leader-elect-lease-duration"),
            renew_deadline=given("leader-elect-renew-deadline"), retry_period=given("leader-elect-retry-period"),
            resource_lock=given("leader-elect-resource-lock"), resource_name=given("leader-elect-resource-name"),
            resource_namespace=given("leader-elect-resource-namespace"))

    def deprecated(self) -> DeprecatedFlags:
        """The deprecated configuration flags given (ApplyDeprecated applies only those)."""
        return DeprecatedFlags(
            profiling=self.given.get("profiling"), contention_profiling=self.given.get("contention-profiling"),
            kubeconfig=self.given.get("kubeconfig"), content_type=self.given.get("kube-api-content-type"),
            qps=self.given.get("kube-api-qps"), burst=self.given.get("kube-api-burst"))

    def run_options(self, *, deterministic: bool = False, kube_version: str | None = None) -> RunOptions:
        from kubesched.live.command import RunOptions

        pod_max = self.given.get("pod-max-in-unschedulable-pods-duration")
        return RunOptions(config=self.value("config") or None, master=self.value("master"),
                          deterministic=deterministic, kube_version=kube_version,
                          feature_gates=self.feature_gates(), deprecated=self.deprecated(),
                          pod_max_in_unschedulable_pods_duration=pod_max)

    def feature_gates(self) -> tuple[str, ...]:
        """``--feature-gates`` as features_for reads them: 1.36's ``component:key=value`` with the
        only component kube-scheduler registers, ``kube`` (the default one)."""
        specs = self.value("feature-gates")
        if self.version < V1_36:
            return tuple(specs)
        out = []
        for spec in specs:
            parts = []
            for part in spec.split(","):
                if not part.strip():
                    continue
                key = part.split("=", 1)[0]
                if ":" in key:
                    component, _, rest = part.partition(":")
                    if component.strip() != "kube":
                        raise ConfigError(f"--feature-gates: component not registered: {component.strip()}")
                    part = rest
                parts.append(part)
            out.append(",".join(parts))
        return tuple(out)

    def validate(self) -> None:
        """What kube-scheduler's Options.Validate and ValidateAndApply check of these flags
        beyond their syntax (ConfigError with its words)."""
        port = self.value("secure-port")
        if not 0 <= port <= 65535:
            raise ConfigError(f"--secure-port {port} must be between 0 and 65535, inclusive. 0 for turning off "
                              "secure port")
        tls = self.value("tls-min-version")
        if tls and tls not in TLS_VERSIONS:
            raise ConfigError(f'unknown tls version "{tls}"')
        for cipher in self.value("tls-cipher-suites"):
            if cipher not in TLS_CIPHERS:
                raise ConfigError(f"Cipher suite {cipher} not supported or doesn't exist")
        hidden = self.value("show-hidden-metrics-for-version")
        if hidden:
            previous = f"{self.version.major}.{self.version.minor - 1}"
            if hidden != previous:
                raise ConfigError(f"--show-hidden-metrics-for-version must be omitted or have the value "
                                  f"'{previous}'. Only the previous minor version is allowed")
        for name in ("tls-cert-file", "tls-private-key-file", "kubeconfig"):
            path = self.given.get(name)
            if path and not os.path.isfile(path) and not (name == "kubeconfig" and self.value("config")):
                raise ConfigError(f"--{name}: open {path}: no such file or directory")
        fmt = self.value("logging-format")
        if fmt not in ("text", "json"):
            raise ConfigError(f'format: Invalid value: "{fmt}": Unsupported log format')
        if fmt != "text" and self.changed("vmodule"):
            raise ConfigError(f'format: Invalid value: "{fmt}": Non-default format doesn\'t honor flag: vmodule')
        if self.value("log-flush-frequency") <= 0:
            raise ConfigError(f'flushFrequency: Invalid value: "{self.given.get("log-flush-frequency")}": '
                              "Must be greater than zero")


#: cliflag.TLSVersion's names -> Python's ssl.TLSVersion member names.
TLS_VERSIONS: Mapping[str, str] = {"VersionTLS10": "TLSv1", "VersionTLS11": "TLSv1_1",
                                   "VersionTLS12": "TLSv1_2", "VersionTLS13": "TLSv1_3"}

#: Go crypto/tls cipher suite names (tls.CipherSuites, tls.InsecureCipherSuites and cliflag's two
#: legacy names) -> OpenSSL's names; "" for TLS 1.3 suites, which neither Go nor OpenSSL's
#: cipher list configures.
TLS_CIPHERS: Mapping[str, str] = {
    "TLS_AES_128_GCM_SHA256": "", "TLS_AES_256_GCM_SHA384": "", "TLS_CHACHA20_POLY1305_SHA256": "",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}


# ======================================================================= click wiring
class KubeFlagOption(click.Option):
    """One kube-scheduler flag: takes its raw text (every occurrence for a list flag); its help
    line reads like pflag's (``--kube-api-qps float32``, no type for a bool)."""

    def __init__(self, flag: KubeFlag, *, group: str) -> None:
        decls = [f"-{flag.shorthand}"] if flag.shorthand else []
        decls += [f"--{flag.name}", *flag.aliases, flag.param]
        default = flag.kubesched_default if flag.kubesched_default is not None else flag.default
        shown = default if default not in ("", "false", "0") or flag.name == "v" else ""
        releases = _releases(flag.name)
        only = f" (kube-scheduler {', '.join(releases)} only)" if len(releases) < len(SUPPORTED_VERSIONS) else ""
        help_text = flag.help + only + (f" [default: {shown}]" if shown else "")
        multiple = flag.kind in _LIST_KINDS
        metavar = "" if flag.kind in _NO_VALUE_KINDS else flag.kind
        super().__init__(decls, multiple=multiple, default=() if multiple else (default or None),
                         help=help_text, metavar=metavar or None, show_default=False)
        self.kube_flag = flag
        self.group = group

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None or self.kube_flag.kind not in _NO_VALUE_KINDS:
            return record
        # pflag prints a bool flag without a type (it takes no value: --flag, --flag=false).
        return ", ".join(self.opts + self.secondary_opts), record[1]


class KubeSchedulerCommand(click.Command):
    """``kubesched run``: pflag's syntax and kube-scheduler's ``--help`` sections."""

    def get_help_option_names(self, ctx: click.Context) -> list[str]:
        """globalflag.AddGlobalFlags: ``-h, --help``, whatever context asks."""
        return ["-h", "--help"]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._pflag_to_click(ctx, args))

    def _pflag_to_click(self, ctx: click.Context, args: list[str]) -> list[str]:
        """pflag's spellings into click's: ``--bool`` -> ``--bool=true``; ``-v3``, ``-v=3``,
        ``-v 3`` -> ``--v=3``; an unknown flag -> ``unknown flag: --x`` (pflag's error); a
        non-empty argument -> kube-scheduler's "does not take any arguments"."""
        options: dict[str, click.Option] = {}
        for p in self.get_params(ctx):
            if isinstance(p, click.Option):
                for opt in (*p.opts, *p.secondary_opts):
                    options[opt] = p
        out: list[str] = []
        positional: list[str] = []
        i = 0
        while i < len(args):
            token = args[i]
            i += 1
            if token == "--":
                positional.extend(args[i:])
                break
            if token.startswith("--"):
                name, eq, _ = token.partition("=")
                option = options.get(name)
                if option is None:
                    raise click.UsageError(f"unknown flag: {name}", ctx)
                if not eq and _takes_no_value(option):
                    token = f"{name}=true"
                elif not eq and not option.is_flag:
                    if i >= len(args):
                        raise click.UsageError(f"flag needs an argument: {name}", ctx)
                    token = f"{name}={args[i]}"
                    i += 1
                out.append(token)
                continue
            if token.startswith("-") and len(token) > 1:
                short = token[1]
                option = options.get(f"-{short}")
                if option is None:
                    raise click.UsageError(f"unknown shorthand flag: '{short}' in {token}", ctx)
                long = next((o for o in option.opts if o.startswith("--")), f"-{short}")
                rest = token[2:]
                if _takes_no_value(option) or option.is_flag:
                    out.append(long if option.is_flag else f"{long}=true")
                    continue
                if rest.startswith("="):
                    rest = rest[1:]
                elif not rest:
                    if i >= len(args):
                        raise click.UsageError(f"flag needs an argument: '{short}' in {token}", ctx)
                    rest = args[i]
                    i += 1
                out.append(f"{long}={rest}")
                continue
            positional.append(token)
        extra = [a for a in positional if a]
        if extra:
            quoted = " ".join(f'"{a}"' for a in positional)
            raise click.UsageError(f'"{ctx.command_path}" does not take any arguments, got [{quoted}]', ctx)
        return out

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """kube-scheduler's named flag sets (cliflag.SetUsageAndHelpFunc), then kubesched's own."""
        sections: dict[str, list[tuple[str, str]]] = {g: [] for g in (*GROUPS, KUBESCHED_GROUP)}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            group = param.group if isinstance(param, KubeFlagOption) else (
                "global" if "--help" in getattr(param, "opts", ()) else KUBESCHED_GROUP)
            sections[group].append(record)
        for group, records in sections.items():
            if records:
                title = "kubesched (not kube-scheduler's)" if group == KUBESCHED_GROUP else group.capitalize()
                with formatter.section(f"{title} flags"):
                    formatter.write_dl(sorted(records, key=lambda r: r[0].lstrip("-").lower()))


def _takes_no_value(option: click.Option) -> bool:
    return isinstance(option, KubeFlagOption) and option.kube_flag.kind in _NO_VALUE_KINDS


def kube_scheduler_options(fn: F) -> F:
    """Add every flag of kube-scheduler 1.30 and 1.36 (:data:`KUBE_SCHEDULER_FLAGS`) to a
    :class:`KubeSchedulerCommand`; the command receives ``kube_flags``: a callable taking the
    release (``--kube-version``) and returning the :class:`KubeSchedulerFlags` (ConfigError for a
    flag that release lacks or a value pflag refuses; :meth:`KubeSchedulerFlags.validate` is the
    command's to call, after ``--version``, as kube-scheduler validates only then)."""

    names = sorted({f.name for f in KUBE_SCHEDULER_FLAGS})

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        raw: dict[str, Sequence[str]] = {}
        for name in names:
            row = _any_row(name)
            value = kwargs.pop(row.param)
            if ctx.get_parameter_source(row.param) == ParameterSource.COMMANDLINE:
                raw[name] = tuple(value) if isinstance(value, tuple) else (value,)

        def parse(version: KubeVersion) -> KubeSchedulerFlags:
            return KubeSchedulerFlags.parse(version, raw)

        return fn(*args, kube_flags=parse, **kwargs)

    decorated: Any = wrapper
    for name in reversed(names):
        row = _any_row(name)
        decorated = _attach(decorated, KubeFlagOption(row, group=row.group))
    return decorated  # type: ignore[no-any-return]


def _attach(fn: Any, option: click.Option) -> Any:
    """click.option() with a ready Option instance (click builds one from its arguments)."""
    if not hasattr(fn, "__click_params__"):
        fn.__click_params__ = []
    fn.__click_params__.append(option)
    return fn


def markdown_rows(groups: Iterable[str] = GROUPS) -> list[str]:
    """The flag tables' rows (``| `--flag` | default | handling |``) for the documentation,
    generated from the table so that the guide and ``--help`` cannot differ."""
    rows = []
    for group in groups:
        for name in sorted({f.name for f in KUBE_SCHEDULER_FLAGS if f.group == group}):
            row = _any_row(name)
            spellings = [f"`-{row.shorthand}`"] if row.shorthand else []
            spellings += [f"`--{row.name}`", *(f"`{a}`" for a in row.aliases)]
            default = row.kubesched_default if row.kubesched_default is not None else row.default
            shown = default if default not in ("", "false", "0") or row.name == "v" else ""
            releases = _releases(name)
            what = {"config": f"mapped to `{row.config_path}`" + (
                " (ignored with `--config`, as upstream)" if row.only_without_config else " (applied with `--config` too)"),
                "honoured": "honoured", "warn": "accepted with a warning, not honoured"}[row.handling]
            if row.note:
                what += f": {row.note}" if row.handling == "warn" else f"; {row.note}"
            if len(releases) < len(SUPPORTED_VERSIONS):
                what += f"; kube-scheduler {', '.join(releases)} only"
            rows.append(f"| {' / '.join(spellings)} | {f'`{shown}`' if shown else 'none'} | {what} |")
    return rows
