"""/metrics (kube-scheduler's names, types, labels, buckets), the health endpoints, serving
flags and the HTTP server itself."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
import httpx
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from kubesched.config.types import LeaderElection
from kubesched.errors import ConfigError
from kubesched.live.flags import LeaderElectionFlags, ServingOptions, leader_election_options, serving_options
from kubesched.live.leader import LeaderElector, LeaseLock, ManualClock
from kubesched.live.serving import (
    DEFAULT_SECURE_PORT,
    HealthChecks,
    SchedulerMetrics,
    ServingThread,
    build_app,
    exponential_buckets,
    start_serving,
)

from .leases import MemoryLeases


def families(metrics: SchedulerMetrics) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}


def bucket_bounds(text: str, name: str) -> list[str]:
    """The ``le`` values of the first series of a histogram, as printed."""
    bounds: list[str] = []
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            if bounds and le == bounds[0]:
                break
            bounds.append(le)
    return bounds


def exercised(m: SchedulerMetrics | None = None) -> SchedulerMetrics:
    m = m if m is not None else SchedulerMetrics()
    m.observe_attempt("scheduled", "kubesched", 0.004)
    m.observe_attempt("unschedulable", "kubesched", 0.02)
    m.observe_attempt("error", "kubesched", 0.5)
    m.observe_algorithm(0.003)
    m.set_pending({"active": 3, "backoff": 1, "unschedulable": 2, "gated": 1})
    m.preemption_attempt()
    m.preemption_victims(3)
    m.observe_extension_point("Filter", "Unschedulable", "kubesched", 0.0002)
    m.observe_extension_point("Bind", "Success", "kubesched", 0.01)
    m.observe_plugin("NodeResourcesFit", "Filter", "Success", 0.00002)
    m.observe_pod_scheduled(1, 0.5)
    m.observe_pod_scheduled(20, 30.0)
    m.incoming("active", "PodAdd")
    m.incoming("unschedulable", "ScheduleAttemptFailure", 2)
    m.observe_permit_wait("Success", 0.1)
    m.set_cache_size(nodes=5, pods=10, assumed_pods=1)
    m.unschedulable_pods_add("NodeResourcesFit", "kubesched", 1)
    m.plugin_evaluated("TaintToleration", "Filter", "kubesched", 4)
    return m


EXPECTED_TYPES = {
    "scheduler_schedule_attempts": "counter",
    "scheduler_scheduling_attempt_duration_seconds": "histogram",
    "scheduler_scheduling_algorithm_duration_seconds": "histogram",
    "scheduler_pending_pods": "gauge",
    "scheduler_preemption_attempts": "counter",
    "scheduler_preemption_victims": "histogram",
    "scheduler_framework_extension_point_duration_seconds": "histogram",
    "scheduler_plugin_execution_duration_seconds": "histogram",
    "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
    "scheduler_pod_scheduling_duration_seconds": "histogram",
    "scheduler_pod_scheduling_attempts": "histogram",
    "scheduler_queue_incoming_pods": "counter",
    "scheduler_permit_wait_duration_seconds": "histogram",
    "scheduler_scheduler_cache_size": "gauge",
    "scheduler_unschedulable_pods": "gauge",
    "scheduler_plugin_evaluation": "counter",
    "leader_election_master_status": "gauge",
    "leader_election_slowpath": "counter",
}


def test_every_metric_has_its_upstream_name_and_type() -> None:
    fams = families(exercised())
    assert {name: f.type for name, f in fams.items()} == EXPECTED_TYPES


@pytest.mark.parametrize(
    ("metric", "labels"),
    [
        ("scheduler_schedule_attempts_total", {"result", "profile"}),
        ("scheduler_scheduling_attempt_duration_seconds_bucket", {"result", "profile", "le"}),
        ("scheduler_pending_pods", {"queue"}),
        ("scheduler_preemption_attempts_total", set()),
        ("scheduler_preemption_victims_bucket", {"le"}),
        ("scheduler_framework_extension_point_duration_seconds_bucket", {"extension_point", "status", "profile", "le"}),
        ("scheduler_plugin_execution_duration_seconds_bucket", {"plugin", "extension_point", "status", "le"}),
        ("scheduler_pod_scheduling_sli_duration_seconds_bucket", {"attempts", "le"}),
        ("scheduler_pod_scheduling_attempts_bucket", {"le"}),
        ("scheduler_queue_incoming_pods_total", {"queue", "event"}),
        ("scheduler_unschedulable_pods", {"plugin", "profile"}),
        ("scheduler_plugin_evaluation_total", {"plugin", "extension_point", "profile"}),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_series_carry_the_upstream_labels(metric: str, labels: set[str]) -> None:
    samples = [s for f in families(exercised()).values() for s in f.samples if s.name == metric]
    assert samples, f"{metric} not exposed"
    assert all(set(s.labels) == labels for s in samples)


@pytest.mark.parametrize(
    ("metric", "bounds"),
    [
        ("scheduler_scheduling_attempt_duration_seconds",
         ["0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "0.512", "1.024", "2.048",
          "4.096", "8.192", "16.384", "+Inf"]),
        ("scheduler_preemption_victims", ["1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0", "+Inf"]),
        ("scheduler_framework_extension_point_duration_seconds",
         ["0.0001", "0.0002", "0.0004", "0.0008", "0.0016", "0.0032", "0.0064", "0.0128", "0.0256", "0.0512",
          "0.1024", "0.2048", "+Inf"]),
        ("scheduler_pod_scheduling_attempts", ["1.0", "2.0", "4.0", "8.0", "16.0", "+Inf"]),
        ("scheduler_pod_scheduling_sli_duration_seconds",
         [repr(0.01 * 2**i) for i in range(20)] + ["+Inf"]),
    ],
    ids=["attempt duration: exp(0.001, 2, 15)", "preemption victims: exp(1, 2, 7)",
         "extension point duration: exp(0.0001, 2, 12)", "pod scheduling attempts: exp(1, 2, 5)",
         "pod scheduling SLI duration: exp(0.01, 2, 20)"],
)
def test_histograms_have_the_upstream_buckets(metric: str, bounds: list[str]) -> None:
    assert bucket_bounds(exercised().render().decode(), metric) == bounds


def test_plugin_execution_buckets_are_computed_by_repeated_multiplication() -> None:
    text = exercised().render().decode()
    expected = [0.00001]
    for _ in range(19):
        expected.append(expected[-1] * 1.5)
    assert [float(b) for b in bucket_bounds(text, "scheduler_plugin_execution_duration_seconds")[:-1]] == expected
    assert exponential_buckets(0.001, 2, 15)[-1] == 16.384


def test_values_land_in_the_right_series() -> None:
    fams = families(exercised())
    attempts = {s.labels["result"]: s.value for s in fams["scheduler_schedule_attempts"].samples
                if s.name.endswith("_total")}
    assert attempts == {"scheduled": 1.0, "unschedulable": 1.0, "error": 1.0}
    assert {s.labels["queue"]: s.value for s in fams["scheduler_pending_pods"].samples} == {
        "active": 3.0, "backoff": 1.0, "unschedulable": 2.0, "gated": 1.0}
    sli = {s.labels["attempts"] for s in fams["scheduler_pod_scheduling_sli_duration_seconds"].samples}
    assert sli == {"1", "15+"}
    victims = {s.labels["le"]: s.value for s in fams["scheduler_preemption_victims"].samples
               if s.name.endswith("_bucket")}
    assert victims["2.0"] == 0.0 and victims["4.0"] == 1.0
    incoming = {(s.labels["queue"], s.labels["event"]): s.value for s in fams["scheduler_queue_incoming_pods"].samples
                if s.name.endswith("_total")}
    assert incoming == {("active", "PodAdd"): 1.0, ("unschedulable", "ScheduleAttemptFailure"): 2.0}


def test_a_fresh_registry_shows_the_pending_queues_at_zero_and_no_created_series() -> None:
    text = SchedulerMetrics().render().decode()
    for q in ("active", "backoff", "unschedulable", "gated"):
        assert f'scheduler_pending_pods{{queue="{q}"}} 0.0' in text
    assert "scheduler_preemption_attempts_total 0.0" in text
    assert "_created" not in exercised().render().decode()
    assert "# TYPE scheduler_schedule_attempts_total counter" in exercised().render().decode()


def test_two_registries_do_not_share_values() -> None:
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.preemption_attempt()
    assert "scheduler_preemption_attempts_total 1.0" in a.render().decode()
    assert "scheduler_preemption_attempts_total 0.0" in b.render().decode()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.observe_attempt("bound", "p", 1.0),
        lambda m: m.set_pending({"waiting": 1}),
        lambda m: m.observe_extension_point("Prefilter", "Success", "p", 1.0),
        lambda m: m.observe_extension_point("Filter", "Fail", "p", 1.0),
        lambda m: m.incoming("gated", "PodAdd"),
    ],
    ids=["an unknown result", "an unknown queue", "a misspelled extension point", "an unknown status code",
         "gated is not an incoming queue (gated pods enter unschedulable)"],
)
def test_label_values_outside_upstreams_are_refused(call: Any) -> None:
    with pytest.raises(ValueError):
        call(SchedulerMetrics())


# ------------------------------------------------------------------------- probes
@pytest.fixture
def checks() -> HealthChecks:
    return HealthChecks()


@contextmanager
def serve(checks: HealthChecks, metrics: SchedulerMetrics | None = None) -> Iterator[httpx.Client]:
    """The app on a real socket (127.0.0.1, a free port) and a client for it."""
    with ServingThread(build_app(metrics or SchedulerMetrics(), checks), host="127.0.0.1", port=0) as srv:
        with httpx.Client(base_url=srv.url, timeout=5) as http:
            yield http


@pytest.fixture
def client(checks: HealthChecks) -> Iterator[httpx.Client]:
    with serve(checks) as http:
        yield http


def test_readyz_waits_for_informers_to_sync(checks: HealthChecks, client: httpx.Client) -> None:
    r = client.get("/readyz")
    assert r.status_code == 500
    assert r.text == ("[+]ping ok\n[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\n"
                      "readyz check failed\n")
    assert client.get("/healthz").text == "ok"
    assert client.get("/livez").text == "ok"
    checks.mark_synced()
    r = client.get("/readyz")
    assert (r.status_code, r.text) == (200, "ok")
    assert r.headers["content-type"].startswith("text/plain") and r.headers["x-content-type-options"] == "nosniff"


def test_readyz_fails_once_shutdown_starts(checks: HealthChecks, client: httpx.Client) -> None:
    checks.mark_synced()
    checks.mark_shutting_down()
    r = client.get("/readyz")
    assert r.status_code == 500 and "[-]shutdown failed: reason withheld" in r.text
    assert client.get("/livez").status_code == 200


def test_verbose_exclude_and_single_checks(checks: HealthChecks, client: httpx.Client) -> None:
    checks.mark_synced()
    assert client.get("/readyz?verbose").text == (
        "[+]ping ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n")
    checks.mark_shutting_down()
    r = client.get("/readyz?verbose&exclude=shutdown&exclude=nope")
    assert r.status_code == 200
    assert "[+]shutdown excluded: ok\n" in r.text
    assert 'warn: some health checks cannot be excluded: no matches for "nope"\n' in r.text
    assert client.get("/readyz/shutdown").text == "internal server error: process is shutting down\n"
    assert client.get("/readyz/ping").text == "ok"
    assert client.get("/readyz/unknown").status_code == 404
    assert client.get("/livez/shutdown").status_code == 404, "shutdown is a readyz-only check"


def test_ready_regardless_of_leadership_but_healthz_watches_the_leader(checks: HealthChecks,
                                                                       client: httpx.Client) -> None:
    api, clock = MemoryLeases(), ManualClock(dt.datetime(2024, 5, 1, tzinfo=dt.UTC))

    def elector(identity: str) -> LeaderElector:
        return LeaderElector(LeaseLock(api, "kube-system", "kubesched", identity),
                             on_started_leading=lambda ctx: None, on_stopped_leading=lambda: None, clock=clock)

    leader, standby = elector("a"), elector("b")
    leader.step()
    standby.step()
    standby_checks = HealthChecks()
    standby_checks.add_leader_election(standby)
    standby_checks.mark_synced()
    checks.add_leader_election(leader)
    checks.mark_synced()
    with serve(standby_checks) as standby_client:
        assert standby_client.get("/readyz").status_code == 200, "a standby replica is ready"
        assert "[+]leaderElection ok" in standby_client.get("/healthz?verbose").text
        assert client.get("/healthz").status_code == 200
        clock.advance(15.0 + 20.0 + 1.0)  # the leader's loop is wedged: no renewal for lease + 20 s
        r = client.get("/healthz")
        assert r.status_code == 500 and "[-]leaderElection failed: reason withheld" in r.text
        assert client.get("/readyz").status_code == 500
        assert client.get("/livez").status_code == 200, "livez has no leaderElection check"
        assert standby_client.get("/healthz").status_code == 200


def test_a_crashing_check_fails_instead_of_raising(checks: HealthChecks, client: httpx.Client) -> None:
    def boom() -> str | None:
        raise RuntimeError("boom")

    checks.add("custom", boom, endpoints=("livez",))
    r = client.get("/livez")
    assert r.status_code == 500 and "[-]custom failed: reason withheld" in r.text
    assert client.get("/livez/custom").text == "internal server error: RuntimeError: boom\n"
    with pytest.raises(ValueError, match="already registered"):
        checks.add("custom", boom)
    with pytest.raises(ValueError, match="unknown health endpoint"):
        checks.add("other", boom, endpoints=("startupz",))


def test_metrics_endpoint_serves_the_text_format(client: httpx.Client) -> None:
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "# TYPE scheduler_pending_pods gauge" in r.text


# ------------------------------------------------------------------------ serving
def test_serving_over_a_real_socket() -> None:
    metrics, checks = SchedulerMetrics(), HealthChecks()
    checks.mark_synced()
    metrics.observe_attempt("scheduled", "kubesched", 0.01)
    with serve(checks, metrics) as http:
        assert str(http.base_url).startswith("http://127.0.0.1:")
        assert http.get("/readyz").text == "ok"
        assert 'scheduler_schedule_attempts_total{profile="kubesched",result="scheduled"} 1.0' in \
            http.get("/metrics").text
    server = start_serving(build_app(metrics, checks), bind_address="127.0.0.1", secure_port=_free_port())
    assert server is not None
    try:
        assert httpx.get(f"{server.url}/livez", timeout=5).text == "ok"
    finally:
        server.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_secure_port_zero_disables_serving() -> None:
    assert start_serving(build_app(SchedulerMetrics(), HealthChecks()), secure_port=0) is None
    with pytest.raises(ConfigError, match="must be given together"):
        ServingThread(build_app(SchedulerMetrics(), HealthChecks()), cert_file="cert.pem")


def test_serving_on_a_busy_port_is_a_config_error() -> None:
    app = build_app(SchedulerMetrics(), HealthChecks())
    with ServingThread(app, port=0) as srv:
        with pytest.raises(ConfigError, match="cannot listen"):
            start_serving(app, bind_address="127.0.0.1", secure_port=srv.port)


# -------------------------------------------------------------------------- flags
@click.command()
@serving_options
@leader_election_options
def probe_command(serving: ServingOptions, leader_election_flags: LeaderElectionFlags) -> None:
    le = leader_election_flags.apply(LeaderElection(resource_name="from-config"))
    click.echo(f"{serving.bind_address} {serving.secure_port} {serving.scheme} {serving.enabled}")
    click.echo(f"{le.leader_elect} {le.lease_duration} {le.renew_deadline} {le.retry_period} {le.resource_name} "
               f"{le.resource_namespace}")


@pytest.mark.parametrize(
    ("args", "serving", "election"),
    [
        ([], f"127.0.0.1 {DEFAULT_SECURE_PORT} http True", "True 15.0 10.0 2.0 from-config kube-system"),
        (["--bind-address=0.0.0.0", "--secure-port=0"], "0.0.0.0 0 http False",
         "True 15.0 10.0 2.0 from-config kube-system"),
        (["--leader-elect=false"], f"127.0.0.1 {DEFAULT_SECURE_PORT} http True",
         "False 15.0 10.0 2.0 from-config kube-system"),
        (["--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=500ms",
          "--leader-elect-resource-name=kubesched", "--leader-elect-resource-namespace=sched"],
         f"127.0.0.1 {DEFAULT_SECURE_PORT} http True", "True 30.0 20.0 0.5 kubesched sched"),
    ],
    ids=["defaults keep the configuration's leader election", "serving disabled with --secure-port=0",
         "--leader-elect=false turns election off", "explicit flags override the configuration file"],
)
def test_flags(args: list[str], serving: str, election: str) -> None:
    result = CliRunner().invoke(probe_command, args)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [serving, election]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--leader-elect-lease-duration=soon"], "is not a duration"),
        (["--leader-elect-lease-duration=5s"], "leaseDuration must be greater than renewDeadline"),
        (["--leader-elect-resource-lock=endpoints"], 'resourceLock value must be "leases"'),
        (["--secure-port=70000"], "70000"),
    ],
    ids=["a duration that Go would not parse", "a lease shorter than the renew deadline", "a lock other than leases",
         "a port out of range"],
)
def test_bad_flags_are_refused(args: list[str], message: str) -> None:
    result = CliRunner().invoke(probe_command, args)
    assert result.exit_code != 0
    assert message in (result.output + str(result.exception))


def test_cert_and_key_go_together(tmp_path: Any) -> None:
    cert = tmp_path / "tls.crt"
    cert.write_text("x")
    result = CliRunner().invoke(probe_command, [f"--cert={cert}"])
    assert result.exit_code == 2 and "must be given together" in result.output
    key = tmp_path / "tls.key"
    key.write_text("x")
    result = CliRunner().invoke(probe_command, [f"--tls-cert-file={cert}", f"--key={key}"])
    assert result.exit_code == 0 and " https " in result.output


def test_serving_https_with_a_certificate(tmp_path: Any) -> None:
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    checks = HealthChecks()
    with ServingThread(build_app(SchedulerMetrics(), checks), port=0, cert_file=str(cert_file),
                       key_file=str(key_file)) as srv:
        assert srv.url.startswith("https://")
        ctx = ssl.create_default_context(cafile=str(cert_file))
        with httpx.Client(verify=ctx, timeout=5) as http:
            assert http.get(f"{srv.url}/healthz").text == "ok"


# ------------------------------------------------------------------ deferred metrics
def _leader_churn(m: SchedulerMetrics) -> None:
    m.leader_on("kube-scheduler")
    m.slowpath_exercised("kube-scheduler")
    m.leader_off("kube-scheduler")
    m.set_pending({"active": 7})  # a gauge set twice: the last value wins
    m.set_pending({"active": 2})


@pytest.mark.parametrize("when", ["materialized, then rendered", "rendered straight away"],
                         ids=["built explicitly after the calls", "built by the first render"])
def test_deferred_metrics_read_exactly_as_metrics_built_from_the_start(when: str) -> None:
    """`kubesched run` builds its prometheus_client metrics once it schedules (a restart's time to
    its first bind); what was recorded before is replayed in order."""
    eager = exercised()
    _leader_churn(eager)
    deferred = SchedulerMetrics(deferred=True)
    deferred.disable(["scheduler_plugin_evaluation_total"])
    eager.disable(["scheduler_plugin_evaluation_total"])
    exercised(deferred)
    _leader_churn(deferred)
    if when.startswith("materialized"):
        deferred.materialize()
    assert deferred.render() == eager.render()
    assert "scheduler_plugin_evaluation_total" not in deferred.render().decode()
    deferred.observe_attempt("scheduled", "kubesched", 0.004)  # after: straight to the real metric
    eager.observe_attempt("scheduled", "kubesched", 0.004)
    assert deferred.render() == eager.render()


def test_a_deferred_metric_held_across_the_build_still_counts() -> None:
    m = SchedulerMetrics(deferred=True)
    child = m.pending_pods.labels(queue="active")
    child.set(4)
    m.materialize()
    child.set(9)  # a reference taken before the build
    assert families(m)["scheduler_pending_pods"].samples[0].value == 9


def test_deferred_metrics_import_prometheus_client_only_when_built() -> None:
    import subprocess
    import sys

    code = ("import sys\nfrom kubesched.live.serving import SchedulerMetrics\n"
            "m = SchedulerMetrics(deferred=True)\nm.observe_attempt('scheduled', 'p', 0.1)\n"
            "before = 'prometheus_client' in sys.modules\nm.materialize()\n"
            "print(before, 'prometheus_client' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
