"""``kubesched run`` takes kube-scheduler's whole command line (kubesched.live.kube_flags).

The expected flag lists below were read off the sources (kube-scheduler 1.36.2 vendored by
openshift/microshift main, 1.30.1 by its release-4.17 branch): options.go initFlags,
deprecated.go, apiserver serving/authentication/authorization options, leader election,
featuregate / compatibility registry, metrics and logs options, verflag and globalflag. Most
cases go through ``--write-config-to``, which writes the effective configuration and exits
before anything connects."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result

from kubesched.cli import main
from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster
from kubesched.config import dump_config
from kubesched.features import V1_30, V1_36, KubeVersion
from kubesched.live.command import KlogJSONFormatter, effective_configuration
from kubesched.live.kube_flags import GROUPS, KUBE_SCHEDULER_FLAGS, KubeSchedulerFlags, flags_of, markdown_rows
from kubesched.live.runner import LiveScheduler
from kubesched.live.serving import HealthChecks, SchedulerMetrics, TLSSettings, build_app, start_serving

from .apihelpers import make_pki

COMMON = {
    "misc": ["config", "master", "write-config-to"],
    "secure serving": ["bind-address", "cert-dir", "http2-max-streams-per-connection", "permit-address-sharing",
                       "permit-port-sharing", "secure-port", "tls-cert-file", "tls-cipher-suites", "tls-min-version",
                       "tls-private-key-file", "tls-sni-cert-key"],
    "authentication": ["authentication-kubeconfig", "authentication-skip-lookup",
                       "authentication-token-webhook-cache-ttl", "authentication-tolerate-lookup-failure",
                       "client-ca-file", "requestheader-allowed-names", "requestheader-client-ca-file",
                       "requestheader-extra-headers-prefix", "requestheader-group-headers",
                       "requestheader-username-headers"],
    "authorization": ["authorization-always-allow-paths", "authorization-kubeconfig",
                      "authorization-webhook-cache-authorized-ttl", "authorization-webhook-cache-unauthorized-ttl"],
    "deprecated": ["contention-profiling", "kube-api-burst", "kube-api-content-type", "kube-api-qps", "kubeconfig",
                   "pod-max-in-unschedulable-pods-duration", "profiling"],
    "leader election": ["leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline",
                        "leader-elect-resource-lock", "leader-elect-resource-name",
                        "leader-elect-resource-namespace", "leader-elect-retry-period"],
    "feature gate": ["feature-gates"],
    "metrics": ["allow-metric-labels", "allow-metric-labels-manifest", "disabled-metrics",
                "show-hidden-metrics-for-version"],
    "logs": ["log-flush-frequency", "log-json-info-buffer-size", "log-json-split-stream", "log-text-info-buffer-size",
             "log-text-split-stream", "logging-format", "v", "vmodule"],
    "global": ["version"],
}
ONLY_1_36 = {"secure serving": ["disable-http2-serving", "tls-curve-preferences"],
             "authentication": ["requestheader-uid-headers"],
             "feature gate": ["emulated-version", "min-compatibility-version"]}
EXPECTED: dict[KubeVersion, dict[str, set[str]]] = {
    V1_30: {g: set(names) for g, names in COMMON.items()},
    V1_36: {g: set(names) | set(ONLY_1_36.get(g, [])) for g, names in COMMON.items()},
}


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Any]:
    return make_pki(tmp_path)


def sample(name: str, pki: dict[str, Any], tmp_path: Path) -> str:
    """A value kube-scheduler accepts for the flag."""
    samples = {
        "config": _config(tmp_path), "master": "http://127.0.0.1:1", "write-config-to": "",
        "bind-address": "0.0.0.0", "cert-dir": str(tmp_path / "certs"), "secure-port": "10300",
        "tls-cert-file": pki["server"], "tls-private-key-file": pki["server_key"],
        "tls-cipher-suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
        "tls-curve-preferences": "23,29", "tls-min-version": "VersionTLS13",
        "tls-sni-cert-key": f"{pki['server']},{pki['server_key']}:*.example.com",
        "http2-max-streams-per-connection": "100",
        "authentication-kubeconfig": "/etc/kubernetes/scheduler.conf",
        "authorization-kubeconfig": "/etc/kubernetes/scheduler.conf",
        "client-ca-file": pki["ca"], "requestheader-client-ca-file": pki["ca"],
        "authentication-token-webhook-cache-ttl": "30s", "authorization-webhook-cache-authorized-ttl": "1m",
        "authorization-webhook-cache-unauthorized-ttl": "5s", "requestheader-allowed-names": "front-proxy-client",
        "requestheader-extra-headers-prefix": "X-Remote-Extra-", "requestheader-group-headers": "X-Remote-Group",
        "requestheader-uid-headers": "X-Remote-Uid", "requestheader-username-headers": "X-Remote-User",
        "authorization-always-allow-paths": "/healthz,/readyz,/livez,/metrics",
        "kube-api-burst": "200", "kube-api-content-type": "application/json", "kube-api-qps": "99.5",
        "kubeconfig": pki["ca"], "pod-max-in-unschedulable-pods-duration": "1m30s",
        "leader-elect-lease-duration": "30s", "leader-elect-renew-deadline": "5s",
        "leader-elect-retry-period": "3s", "leader-elect-resource-lock": "leases",
        "leader-elect-resource-name": "other", "leader-elect-resource-namespace": "other-ns",
        "emulated-version": "kube=1.35", "min-compatibility-version": "kube=1.35",
        "feature-gates": "SchedulerQueueingHints=true", "allow-metric-labels": "metric1,label1='v1,v2'",
        "allow-metric-labels-manifest": str(tmp_path / "manifest.yaml"), "disabled-metrics": "scheduler_goroutines",
        "show-hidden-metrics-for-version": "", "log-flush-frequency": "10s", "log-json-info-buffer-size": "1Ki",
        "log-text-info-buffer-size": "512", "logging-format": "text", "v": "2", "vmodule": "schedule_one=4",
    }
    return str(samples.get(name, "true"))  # the bools


def _config(tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "leaderElection:\n  resourceName: from-file\nclientConnection:\n  qps: 11\n"
                    "profiles:\n- schedulerName: from-file\n")
    return str(path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args], catch_exceptions=False)


def written(tmp_path: Path, *args: str, version: KubeVersion = V1_36) -> tuple[Result, dict[str, Any]]:
    out = tmp_path / "written.yaml"
    result = invoke(f"--kube-version={version}", *args, f"--write-config-to={out}")
    assert result.exit_code == 0, result.output
    return result, yaml.safe_load(out.read_text())


def at(document: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        document = document[key]
    return document


# --------------------------------------------------------------------- the flag lists
@pytest.mark.parametrize("version", [V1_30, V1_36], ids=["kube-scheduler 1.30's flags", "kube-scheduler 1.36's flags"])
def test_the_table_lists_exactly_kube_schedulers_flags_in_their_help_sections(version: KubeVersion) -> None:
    table: dict[str, set[str]] = {g: set() for g in GROUPS}
    for flag in flags_of(version):
        table[flag.group].add(flag.name)
    assert table == EXPECTED[version]


def test_help_prints_kube_schedulers_sections_in_its_order() -> None:
    text = invoke("--help").output
    titles = [f"{g.capitalize()} flags:" for g in GROUPS]
    positions = [text.index(t) for t in titles]
    assert positions == sorted(positions)
    assert "-v, --v Level" in text and "--kube-api-qps float32" in text and "-h, --help" in text
    assert "--disable-http2-serving" in text and "(kube-scheduler 1.36 only)" in " ".join(text.split())


def test_the_documented_rows_come_from_the_table() -> None:
    rows = markdown_rows()
    assert len(rows) == len({f.name for f in KUBE_SCHEDULER_FLAGS})
    assert "| `--kube-api-qps` | `50` | mapped to `clientConnection.qps` (ignored with `--config`, as upstream) |" in rows


# ------------------------------------------------------------------- every flag parses
PARSE_CASES = [(v, f.name) for v in (V1_30, V1_36) for f in flags_of(v) if f.name not in ("write-config-to", "version")]


@pytest.mark.parametrize(("version", "name"), PARSE_CASES, ids=[f"{v}: --{n} takes a value kube-scheduler takes"
                                                                  for v, n in PARSE_CASES])
def test_every_flag_parses(version: KubeVersion, name: str, pki: dict[str, Any], tmp_path: Path) -> None:
    value = sample(name, pki, tmp_path)
    if name == "show-hidden-metrics-for-version":
        value = f"{version.major}.{version.minor - 1}"
    result, _ = written(tmp_path, f"--{name}={value}", version=version)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("args", "path", "value"), [
    pytest.param(["--leader-elect"], "leaderElection.leaderElect", True, id="a bool flag alone means true"),
    pytest.param(["--leader-elect=false"], "leaderElection.leaderElect", False, id="a bool flag takes =false"),
    pytest.param(["--leader-elect=F"], "leaderElection.leaderElect", False, id="a bool flag takes Go's F"),
    pytest.param(["--kube-api-burst", "7"], "clientConnection.burst", 7, id="a value flag takes its value after a space"),
    pytest.param(["--kube-api-qps=1", "--kube-api-qps=2"], "clientConnection.qps", 2, id="the last value wins"),
], )
def test_go_flag_syntax(args: list[str], path: str, value: Any, tmp_path: Path) -> None:
    _, document = written(tmp_path, *args)
    assert at(document, path) == value


@pytest.mark.parametrize("spelling", [["-v3"], ["-v=3"], ["-v", "3"], ["--v=3"], ["--v", "3"]],
                         ids=["-v3", "-v=3", "-v 3", "--v=3", "--v 3"])
def test_klog_verbosity_spellings(spelling: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import kubesched.live.command as command

    seen: list[int] = []

    def configure_logging(verbosity: int, logging_format: str = "text") -> None:
        seen.append(verbosity)

    monkeypatch.setattr(command, "configure_logging", configure_logging)
    assert KubeSchedulerFlags.parse(V1_36, {}).value("v") == 0
    result = invoke(*spelling, "--write-config-to=/dev/null")
    assert result.exit_code == 0, result.output
    assert seen == [3]


# ------------------------------------------------------------------ rejected command lines
REJECTED = [
    (V1_36, ["--nope"], "unknown flag: --nope"),
    (V1_36, ["--lock-object-name=x"], "unknown flag: --lock-object-name"),  # removed before 1.30
    (V1_36, ["-x"], "unknown shorthand flag: 'x' in -x"),
    (V1_36, ["--leader-elect", "false"], 'does not take any arguments, got ["false"]'),
    (V1_36, ["--kube-api-qps=abc"], 'invalid argument "abc" for "--kube-api-qps" flag: strconv.ParseFloat: '
                                    'parsing "abc": invalid syntax'),
    (V1_36, ["--leader-elect=yes"], 'invalid argument "yes" for "--leader-elect" flag: strconv.ParseBool'),
    (V1_36, ["--kube-api-burst=3000000000"], "value out of range"),
    (V1_36, ["--leader-elect-lease-duration=15"], 'time: invalid duration "15"'),
    (V1_36, ["--bind-address=here"], 'failed to parse IP: "here"'),
    (V1_36, ["-v=x"], 'invalid argument "x" for "-v, --v" flag: strconv.ParseUint'),
    (V1_36, ["--secure-port=70000"], "--secure-port 70000 must be between 0 and 65535"),
    (V1_36, ["--tls-min-version=VersionTLS14"], 'unknown tls version "VersionTLS14"'),
    (V1_36, ["--tls-cipher-suites=TLS_NOPE"], "Cipher suite TLS_NOPE not supported or doesn't exist"),
    (V1_36, ["--show-hidden-metrics-for-version=1.30"], "must be omitted or have the value '1.35'"),
    (V1_30, ["--show-hidden-metrics-for-version=1.35"], "must be omitted or have the value '1.29'"),
    (V1_36, ["--logging-format=xml"], 'format: Invalid value: "xml": Unsupported log format'),
    (V1_36, ["--feature-gates=wardle:Foo=true"], "component not registered: wardle"),
    (V1_30, ["--feature-gates=kube:SchedulerQueueingHints=true"], "unrecognized feature gate"),
    (V1_36, ["--tls-cert-file=/nonexistent.crt", "--tls-private-key-file=/nonexistent.key"],
     "open /nonexistent.crt: no such file or directory"),
] + [(V1_30, [f"--{name}=1"], f"unknown flag: --{name}") for names in ONLY_1_36.values() for name in names]


@pytest.mark.parametrize(("version", "args", "message"), REJECTED,
                         ids=[f"{v}: {' '.join(a)} is refused" for v, a, _ in REJECTED])
def test_a_command_line_kube_scheduler_refuses_is_refused(version: KubeVersion, args: list[str], message: str,
                                                          tmp_path: Path) -> None:
    result = invoke(f"--kube-version={version}", *args, f"--write-config-to={tmp_path / 'x.yaml'}")
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "x.yaml").exists()


# --------------------------------------------------------- deprecated flags -> configuration
CONFIG_ROWS = [f for f in flags_of(V1_36) if f.handling == "config"]


@pytest.mark.parametrize("flag", CONFIG_ROWS, ids=[f"--{f.name} lands in {f.config_path}" for f in CONFIG_ROWS])
def test_each_mapped_flag_lands_in_its_configuration_field(flag: Any, pki: dict[str, Any], tmp_path: Path) -> None:
    value = sample(flag.name, pki, tmp_path) if flag.kind != "bool" else "false"
    if flag.name == "leader-elect":
        value = "false"  # (lease timings are checked only when electing)
    _, document = written(tmp_path, f"--{flag.name}={value}")
    expected: Any = (value == "true" if flag.kind == "bool" else int(value) if flag.kind == "int32"
                     else float(value) if flag.kind == "float32" else value)
    assert at(document, flag.config_path) == expected


@pytest.mark.parametrize("flag", CONFIG_ROWS, ids=[
    f"with --config, --{f.name} is {'ignored with a warning' if f.only_without_config else 'still applied'}"
    for f in CONFIG_ROWS])
def test_with_config_only_the_leader_election_flags_apply(flag: Any, pki: dict[str, Any], tmp_path: Path) -> None:
    value = sample(flag.name, pki, tmp_path) if flag.kind != "bool" else "false"
    extra = []
    if flag.name == "leader-elect":
        value = "false"
    if flag.name == "leader-elect-resource-lock":
        # "leases" is the only lock when electing; without election any value is kept.
        value, extra = "endpointsleases", ["--leader-elect=false"]
    _, baseline = written(tmp_path, f"--config={_config(tmp_path)}", *extra)
    result, document = written(tmp_path, f"--config={_config(tmp_path)}", f"--{flag.name}={value}", *extra)
    warnings = [line for line in result.output.splitlines() if f"--{flag.name} " in line]
    if flag.only_without_config:
        assert document == baseline
        assert len(warnings) == 1 and "ignored because --config is given" in warnings[0]
    else:
        assert at(document, flag.config_path) != at(baseline, flag.config_path)
        assert warnings == []


def test_the_file_keeps_its_own_values_and_flags_fill_the_defaults_without_it(tmp_path: Path) -> None:
    _, from_file = written(tmp_path, f"--config={_config(tmp_path)}", "--kube-api-qps=99")
    assert from_file["clientConnection"]["qps"] == 11
    assert from_file["leaderElection"]["resourceName"] == "from-file"
    _, from_flags = written(tmp_path, "--kube-api-qps=99", "--leader-elect-resource-name=flag")
    assert from_flags["clientConnection"]["qps"] == 99
    assert from_flags["leaderElection"]["resourceName"] == "flag"


# ---------------------------------------------------------------------- warned flags
WARN_CASES = [(v, f.name) for v in (V1_30, V1_36) for f in flags_of(v) if f.handling == "warn"]


@pytest.mark.parametrize(("version", "name"), WARN_CASES,
                         ids=[f"{v}: --{n} warns once, naming it" for v, n in WARN_CASES])
def test_each_flag_kubesched_cannot_honour_warns_exactly_once(version: KubeVersion, name: str,
                                                              pki: dict[str, Any], tmp_path: Path) -> None:
    result, _ = written(tmp_path, f"--{name}={sample(name, pki, tmp_path)}", version=version)
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"flag --{name} is accepted but not honoured" in warnings[0]


def test_honoured_and_mapped_flags_do_not_warn(tmp_path: Path) -> None:
    result, _ = written(tmp_path, "--kube-api-qps=3", "--leader-elect=false", "--disabled-metrics=x",
                        "--permit-port-sharing", "--disable-http2-serving", "-v=2")
    assert "warning" not in result.output


def test_tls_flags_on_plain_http_warn_that_they_do_nothing(tmp_path: Path) -> None:
    result, _ = written(tmp_path, "--tls-min-version=VersionTLS13")
    assert "flag --tls-min-version has no effect: kubesched serves plain HTTP" in result.output


# ---------------------------------------------------------------- honoured: their effect
@pytest.fixture
def served(pki: dict[str, Any]) -> Iterator[Any]:
    servers: list[Any] = []

    def serve(*args: str) -> Any:
        flags = KubeSchedulerFlags.parse(V1_36, _raw(args))
        serving = flags.serving()
        cert, key = serving.certificate()
        server = start_serving(build_app(SchedulerMetrics(), HealthChecks()), bind_address="127.0.0.1",
                               secure_port=_free_port(), cert_file=cert, key_file=key,
                               tls=TLSSettings(serving.tls_min_version, serving.cipher_suites),
                               reuse_port=serving.permit_port_sharing)
        servers.append(server)
        return server

    yield serve
    for s in servers:
        s.stop()


def _raw(args: tuple[str, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in args:
        name, _, value = a[2:].partition("=")
        out.setdefault(name, []).append(value)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _handshake(port: int, ca: str, maximum: ssl.TLSVersion) -> tuple[str, str] | None:
    ctx = ssl.create_default_context(cafile=ca)
    ctx.maximum_version = maximum
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            cipher = tls.cipher()
            return (str(tls.version()), cipher[0]) if cipher else None
    except ssl.SSLError:
        return None


def test_tls_min_version_is_the_serving_contexts_minimum(served: Any, pki: dict[str, Any]) -> None:
    server = served(f"--tls-cert-file={pki['server']}", f"--tls-private-key-file={pki['server_key']}",
                    "--tls-min-version=VersionTLS13")
    assert _handshake(server.port, pki["ca"], ssl.TLSVersion.TLSv1_2) is None
    assert _handshake(server.port, pki["ca"], ssl.TLSVersion.TLSv1_3) is not None


def test_without_tls_min_version_tls_1_2_is_the_minimum_as_gos_server_default(served: Any,
                                                                              pki: dict[str, Any]) -> None:
    server = served(f"--tls-cert-file={pki['server']}", f"--tls-private-key-file={pki['server_key']}")
    ctx = server._server.config.ssl  # noqa: SLF001 - the context uvicorn serves with
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2


def test_tls_cipher_suites_choose_the_negotiated_suite(served: Any, pki: dict[str, Any]) -> None:
    server = served(f"--tls-cert-file={pki['server']}", f"--tls-private-key-file={pki['server_key']}",
                    "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
    assert _handshake(server.port, pki["ca"], ssl.TLSVersion.TLSv1_2) == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")


def test_cert_dir_serves_https_with_a_generated_pair_kept_there(served: Any, tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    server = served(f"--cert-dir={certs}")
    assert server.scheme == "https"
    assert (certs / "kube-scheduler.crt").is_file() and (certs / "kube-scheduler.key").is_file()
    response = httpx.get(f"https://127.0.0.1:{server.port}/healthz",
                         verify=ssl.create_default_context(cafile=str(certs / "kube-scheduler.crt")))
    assert response.text == "ok"
    first = (certs / "kube-scheduler.crt").read_bytes()
    served(f"--cert-dir={certs}")
    assert (certs / "kube-scheduler.crt").read_bytes() == first, "an existing pair is reused"


def test_permit_port_sharing_lets_two_replicas_bind_one_port(pki: dict[str, Any]) -> None:
    port = _free_port()
    app = build_app(SchedulerMetrics(), HealthChecks())
    first = start_serving(app, bind_address="127.0.0.1", secure_port=port, reuse_port=True)
    try:
        second = start_serving(app, bind_address="127.0.0.1", secure_port=port, reuse_port=True)
        assert second is not None
        second.stop()
    finally:
        assert first is not None
        first.stop()


def test_disabled_metrics_leave_metrics_out_of_metrics() -> None:
    flags = KubeSchedulerFlags.parse(V1_36, {"disabled-metrics": ["scheduler_pending_pods",
                                                                  "scheduler_schedule_attempts_total"]})
    metrics = SchedulerMetrics()
    metrics.observe_attempt("scheduled", "p", 0.1)
    metrics.disable(flags.serving().disabled_metrics)
    text = metrics.render().decode()
    assert "scheduler_pending_pods" not in text and "scheduler_schedule_attempts_total" not in text
    assert "scheduler_scheduling_attempt_duration_seconds" in text


def test_pod_max_in_unschedulable_pods_duration_reaches_the_live_queue() -> None:
    flags = KubeSchedulerFlags.parse(V1_36, {"pod-max-in-unschedulable-pods-duration": ["90s"]})
    options = flags.run_options()
    assert options.pod_max_in_unschedulable_pods_duration == 90.0
    with ApiClient(ClusterConfig(server="http://127.0.0.1:9"), qps=0) as client:
        sched = LiveScheduler(None, LiveCluster(client),
                              pod_max_in_unschedulable_pods_duration=options.pod_max_in_unschedulable_pods_duration)
        assert sched.queue.pod_max_in_unschedulable_pods_duration == 90.0
        assert LiveScheduler(None, LiveCluster(client)).queue.pod_max_in_unschedulable_pods_duration == 300.0


def test_deprecated_kubeconfig_is_the_client_connections_without_config(pki: dict[str, Any]) -> None:
    flags = KubeSchedulerFlags.parse(V1_36, {"kubeconfig": [pki["ca"]], "kube-api-qps": ["5"]})
    cfg = effective_configuration(flags.run_options(), flags.leader_election())
    assert cfg.client_connection.kubeconfig == pki["ca"] and cfg.client_connection.qps == 5.0


def test_logging_format_json_writes_klogs_json_lines() -> None:
    import json
    import logging

    record = logging.LogRecord("kubesched.run", logging.INFO, "/x/command.py", 7, "hello %s", ("world",), None)
    line = json.loads(KlogJSONFormatter().format(record))
    assert line["msg"] == "hello world" and line["v"] == 0 and line["caller"] == "command.py:7"
    error = logging.LogRecord("kubesched.run", logging.ERROR, "/x/command.py", 8, "bad", (), None)
    assert "v" not in json.loads(KlogJSONFormatter().format(error))


def test_version_prints_the_version_and_exits_zero() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and result.output.startswith("kubesched ")
    assert "kube-scheduler v1.36" in result.output


def test_feature_gates_of_the_kube_component_apply_in_1_36(tmp_path: Path) -> None:
    flags = KubeSchedulerFlags.parse(V1_36, {"feature-gates": ["kube:SchedulerAsyncAPICalls=true"]})
    assert flags.feature_gates() == ("SchedulerAsyncAPICalls=true",)


# -------------------------------------------------------------------- --write-config-to
def test_write_config_to_writes_the_effective_configuration_and_exits_without_connecting(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    accepted = threading.Event()
    try:
        out = tmp_path / "effective.yaml"
        result = invoke(f"--master=http://127.0.0.1:{listener.getsockname()[1]}", "--kube-api-qps=12",
                        "--leader-elect=false", f"--write-config-to={out}")
        assert result.exit_code == 0, result.output
        try:
            listener.accept()
            accepted.set()
        except BlockingIOError:
            pass
    finally:
        listener.close()
    assert not accepted.is_set(), "nothing connects to the API server"
    flags = KubeSchedulerFlags.parse(V1_36, {"kube-api-qps": ["12"], "leader-elect": ["false"]})
    expected = dump_config(effective_configuration(flags.run_options(), flags.leader_election()))
    assert yaml.safe_load(out.read_text()) == yaml.safe_load(yaml.safe_dump(expected, sort_keys=False))


def test_write_config_to_fails_on_a_profile_kube_scheduler_could_not_build(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                      "- schedulerName: x\n  plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n")
    result = invoke(f"--config={config}", f"--write-config-to={tmp_path / 'out.yaml'}")
    assert result.exit_code == 2
    assert not (tmp_path / "out.yaml").exists()
