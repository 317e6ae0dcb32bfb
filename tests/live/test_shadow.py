"""``kubesched shadow`` against the local API server: a scripted "real scheduler" (this test
code) binds and fails pods through the API; the shadow watches read-only and counts each
decision as agreed, tied or disagreed with kubesched's in the view the real scheduler had."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesched.cluster.live import ApiClient, ClusterConfig, LiveCluster
from kubesched.errors import ConfigError, KubeschedError
from kubesched.live.flags import ServingOptions
from kubesched.live.shadow import (
    AGREED,
    DISAGREED,
    SHADOW_API_CALLS,
    TIED,
    ReadOnlyApiClient,
    ShadowMonitor,
    ShadowOptions,
    ShadowTally,
    Verdict,
    run_shadow,
)
from kubesched.plugins.registry import REGISTRY
from kubesched.testing.apiserver import LocalApiServer

from .apihelpers import FAST, node, pod, priority_class, wait_until

AGENT = "kubesched-shadow"
REAL = "scripted-scheduler"
TWINS = {"pool": "twins"}
# What kube-scheduler 1.36 writes in the PodScheduled condition for a pod no node can hold and
# no preemption can help: FitError.Error() with the PostFilter plugins' reasons joined
# (DynamicResources', then DefaultPreemption's).
HUGE_MESSAGE = ("0/4 nodes are available: 4 Insufficient cpu. no new claims to deallocate, preemption: 0/4 nodes "
                "are available: 4 Preemption is not helpful for scheduling.")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RealScheduler:
    """The cluster's scheduler, scripted: binds a pod where the test says, or writes the
    PodScheduled=False condition a failed attempt writes, through the API (HTTP)."""

    def __init__(self, api: LocalApiServer) -> None:
        self.http = httpx.Client(base_url=api.url, headers={"User-Agent": REAL}, timeout=10.0)

    def bind(self, name: str, node_name: str, namespace: str = "default") -> None:
        r = self.http.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
                           json={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                 "target": {"kind": "Node", "name": node_name}})
        assert r.status_code == 201, r.text

    def patch_status(self, name: str, status: dict[str, Any], namespace: str = "default") -> None:
        r = self.http.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status", content=json.dumps(
            {"status": status}), headers={"Content-Type": "application/strategic-merge-patch+json"})
        assert r.status_code == 200, r.text

    def fail(self, name: str, message: str, nominated: str = "") -> None:
        status: dict[str, Any] = {"conditions": [{"type": "PodScheduled", "status": "False",
                                                  "reason": "Unschedulable", "message": message}]}
        if nominated:
            status["nominatedNodeName"] = nominated
        self.patch_status(name, status)

    def close(self) -> None:
        self.http.close()


@dataclass
class Shadow:
    """``run_shadow`` on a thread (its stop event stands for SIGTERM)."""

    stop: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    monitor: ShadowMonitor | None = None
    url: str | None = None
    summary: dict[str, Any] | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def wait_observed(self, n: int) -> None:
        assert self.monitor is not None
        monitor = self.monitor
        wait_until(lambda: monitor.tally.observed >= n, 15.0, f"{n} decisions observed")

    def halt(self) -> dict[str, Any]:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(15.0)
        if self.error is not None:
            raise self.error
        assert self.summary is not None
        return self.summary


def start_shadow(api: LocalApiServer, options: ShadowOptions, serving: ServingOptions) -> Shadow:
    shadow = Shadow()
    client = ReadOnlyApiClient(ClusterConfig(server=api.url), qps=0, timeout=10.0, user_agent=AGENT)

    def started(monitor: ShadowMonitor, url: str | None) -> None:
        shadow.monitor, shadow.url = monitor, url
        shadow.started.set()

    def target() -> None:
        try:
            shadow.summary = run_shadow(options, serving, REGISTRY, stop=shadow.stop, api=client,
                                        explain=lambda a, nodes: "EXPLAIN " + " ".join(sorted(n.name for n in nodes)),
                                        live_options=FAST, on_started=started)
        except BaseException as e:  # noqa: BLE001 - raised by halt()
            shadow.error = e
            shadow.started.set()

    shadow.thread = threading.Thread(target=target, name="shadow", daemon=True)
    shadow.thread.start()
    assert shadow.started.wait(15.0), "the shadow did not sync"
    if shadow.error is not None:
        raise shadow.error
    return shadow


@pytest.fixture
def api() -> Iterator[LocalApiServer]:
    with LocalApiServer(bookmark_interval=0.2) as server:
        server.create(node("big", "16", "32Gi"))
        server.create(node("small", "2", "4Gi"))
        server.create(node("twin-a", "4", "8Gi", labels=TWINS))
        server.create(node("twin-b", "4", "8Gi", labels=TWINS))
        yield server


@pytest.fixture
def real(api: LocalApiServer) -> Iterator[RealScheduler]:
    r = RealScheduler(api)
    yield r
    r.close()


@pytest.fixture(autouse=True)
def no_ambient_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def small_pod(name: str, cpu: str = "500m", **spec: Any) -> dict[str, Any]:
    return pod(name, cpu, "512Mi", **spec)


# -------------------------------------------------------------------------- the scripted run
@pytest.fixture
def scripted_run(api: LocalApiServer, real: RealScheduler, tmp_path: Path) -> tuple[Shadow, dict[str, Any], Path]:
    """The script of the module docstring; returns the shadow (halted), its summary and output."""
    out = tmp_path / "summary.json"
    shadow = start_shadow(api, ShadowOptions(output=str(out)), ServingOptions(secure_port=free_port()))
    seen: list[Verdict] = []
    assert shadow.monitor is not None
    shadow.monitor.on_verdict = seen.append
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("web-1", small_pod("web-1"), "big"),  # the least allocated node by far: agreed
        ("web-2", small_pod("web-2"), "big"),  # still: agreed
        ("twin-1", small_pod("twin-1", nodeSelector=TWINS), "twin-a"),  # two identical nodes: tied
        # twin-1 is on twin-a: twin-b is now the one top node (agreed only if the view has twin-1)
        ("twin-2", small_pod("twin-2", nodeSelector=TWINS), "twin-b"),
        ("worse", small_pod("worse"), "small"),  # kubesched would take big: disagreed
    ]
    for name, manifest, target in steps:
        api.create(manifest)
        real.bind(name, target)
    # A pending pod nominated to twin-a (a preemption's nomination) holds 3 CPUs there: a pod of
    # 1 CPU fits only twin-b, which kubesched agrees with only if it counts the nomination.
    api.create(small_pod("nominee", "3", nodeSelector=TWINS))
    real.patch_status("nominee", {"nominatedNodeName": "twin-a"})
    api.create(small_pod("after", "1", nodeSelector=TWINS))
    real.bind("after", "twin-b")
    api.create(small_pod("misplaced", nodeSelector=TWINS))
    real.bind("misplaced", "big")  # outside its nodeSelector: disagreed
    # Not the watched scheduler's, or created bound: not decisions to compare.
    api.create(small_pod("other", scheduler="other-scheduler"))
    real.bind("other", "small")
    api.create(small_pod("prebound", node_name="small"))
    # Failures, compared by their message.
    api.create(small_pod("huge", "64"))
    real.fail("huge", HUGE_MESSAGE)
    api.create(small_pod("huge-2", "64"))
    real.fail("huge-2", "0/4 nodes are available: 4 node(s) had untolerated taint {dedicated: gpu}.")
    shadow.wait_observed(9)
    # Everything after the last comparison reached the view too (the pod watch is in order).
    api.create(small_pod("last"))
    real.bind("last", "big")
    shadow.wait_observed(10)
    metrics = httpx.get(f"{shadow.url}/metrics", timeout=5.0).text
    summary = shadow.halt()
    summary["_verdicts"] = seen
    summary["_metrics"] = metrics
    return shadow, summary, out


def test_the_shadow_counts_agreed_tied_and_disagreed_decisions_exactly(scripted_run: Any) -> None:
    _, summary, _ = scripted_run
    results = {v.pod: v.result for v in summary["_verdicts"]}
    assert results == {
        "default/web-1": AGREED, "default/web-2": AGREED, "default/twin-1": TIED, "default/twin-2": AGREED,
        "default/worse": DISAGREED, "default/after": AGREED, "default/misplaced": DISAGREED,
        "default/huge": AGREED, "default/huge-2": DISAGREED, "default/last": AGREED,
    }
    assert (summary["observed"], summary["agreed"], summary["tied"], len(summary["disagreed"])) == (10, 6, 1, 3)


def test_a_tie_names_every_equally_top_scored_node(scripted_run: Any) -> None:
    _, summary, _ = scripted_run
    (tie,) = [v for v in summary["_verdicts"] if v.result == TIED]
    assert (tie.pod, tie.node, tie.top) == ("default/twin-1", "twin-a", ("twin-a", "twin-b"))
    assert tie.predicted in tie.top


def test_each_disagreement_names_the_pod_the_real_node_kubesched_node_and_why(scripted_run: Any) -> None:
    _, summary, _ = scripted_run
    by_pod = {d["pod"]: d for d in summary["disagreed"]}
    worse = by_pod["default/worse"]
    assert (worse["node"], worse["predicted"], worse["decision"]) == ("small", "big", "bound")
    assert worse["why"].startswith("kubesched scores small ") and "below big at" in worse["why"]
    misplaced = by_pod["default/misplaced"]
    assert (misplaced["node"], misplaced["predicted"]) == ("big", "twin-a")
    assert misplaced["why"] == ("kubesched filters big out (NodeAffinity: node(s) didn't match Pod's node "
                                "affinity/selector) and would pick twin-a")
    huge = by_pod["default/huge-2"]
    assert (huge["node"], huge["predicted"], huge["decision"]) == (None, None, "unschedulable")
    assert huge["message"] == HUGE_MESSAGE
    assert huge["why"].startswith("a different fit error: kubesched says '0/4 nodes are available: 4 Insufficient")


def test_the_summary_file_is_written_when_the_shadow_stops(scripted_run: Any) -> None:
    _, summary, out = scripted_run
    written = json.loads(out.read_text())
    assert written == {k: v for k, v in summary.items() if not k.startswith("_")}
    assert set(written) == {"observed", "agreed", "tied", "disagreed"}
    assert [d["pod"] for d in written["disagreed"]] == ["default/worse", "default/misplaced", "default/huge-2"]


def test_the_decisions_are_prometheus_metrics(scripted_run: Any) -> None:
    _, summary, _ = scripted_run
    metrics = summary["_metrics"]
    for line in ('kubesched_shadow_decisions_total{decision="bound",result="agreed"} 5.0',
                 'kubesched_shadow_decisions_total{decision="bound",result="tied"} 1.0',
                 'kubesched_shadow_decisions_total{decision="bound",result="disagreed"} 2.0',
                 'kubesched_shadow_decisions_total{decision="unschedulable",result="agreed"} 1.0',
                 'kubesched_shadow_decisions_total{decision="unschedulable",result="disagreed"} 1.0',
                 "kubesched_shadow_view_nodes 4.0",
                 "kubesched_shadow_evaluation_duration_seconds_count 10.0"):
        assert line in metrics.splitlines(), line
    assert "_created" not in metrics, "kube-scheduler's metrics carry no *_created samples, nor do these"


def test_the_shadow_only_reads(api: LocalApiServer, scripted_run: Any) -> None:
    calls = api.calls(user_agent=AGENT)
    assert calls, "the shadow made no request at all"
    assert {c.verb for c in calls} <= {"get", "list", "watch"}, sorted({c.verb for c in calls})
    # ... and only those deploy/shadow-rbac.yaml allows (tests/live/test_shadow_rbac.py).
    assert {(c.verb, c.resource) for c in calls} <= {(c.verb, c.resource) for c in SHADOW_API_CALLS}
    assert {c.resource for c in calls if c.verb == "watch"} >= {"pods", "nodes"}
    # The real scheduler's writes are there, with its own User-Agent.
    assert api.calls("create", "pods", "binding", user_agent=REAL)


def test_the_disagreement_log_carries_the_explain_table(api: LocalApiServer, real: RealScheduler,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    shadow = start_shadow(api, ShadowOptions(), ServingOptions(secure_port=0))
    with caplog.at_level("INFO", logger="kubesched.shadow"):
        api.create(small_pod("worse"))
        real.bind("worse", "small")
        shadow.wait_observed(1)
    shadow.halt()
    (record,) = [r for r in caplog.records if r.levelname == "WARNING" and "disagreed" in r.getMessage()]
    text = record.getMessage()
    assert text.startswith("disagreed: default/worse bound (real node small, kubesched big): kubesched scores small")
    assert text.endswith("\nEXPLAIN big small twin-a twin-b")


# -------------------------------------------------------------------------- the view
def test_a_binding_is_judged_on_the_view_before_it_not_after(api: LocalApiServer, real: RealScheduler) -> None:
    """Applied first, the pod's own binding would make another twin the better one."""
    shadow = start_shadow(api, ShadowOptions(), ServingOptions(secure_port=0))
    seen: list[Verdict] = []
    assert shadow.monitor is not None
    shadow.monitor.on_verdict = seen.append
    api.create(small_pod("a", "2", nodeSelector=TWINS))
    real.bind("a", "twin-a")
    api.create(small_pod("b", "2", nodeSelector=TWINS))
    real.bind("b", "twin-b")
    shadow.wait_observed(2)
    shadow.halt()
    assert [(v.pod, v.result) for v in seen] == [("default/a", TIED), ("default/b", AGREED)]


def test_an_expectation_nomination_written_before_the_bind_is_not_the_decision(api: LocalApiServer,
                                                                               real: RealScheduler) -> None:
    """NominatedNodeNameForExpectation patches status.nominatedNodeName in the binding cycle,
    after the decision: judged with it, a bind to the worse node would look agreed."""
    shadow = start_shadow(api, ShadowOptions(), ServingOptions(secure_port=0))
    api.create(small_pod("p"))
    real.patch_status("p", {"nominatedNodeName": "small"})
    real.bind("p", "small")
    shadow.wait_observed(1)
    summary = shadow.halt()
    assert [(d["pod"], d["predicted"]) for d in summary["disagreed"]] == [("default/p", "big")]


def test_a_failure_after_a_successful_preemption_is_compared_with_the_nomination(
        api: LocalApiServer, real: RealScheduler) -> None:
    """A victim on small: kubesched's dry run also finds that preempting it helps (the
    PostFilter message is then empty), and deletes nothing."""
    api.create(priority_class("high", 1000))
    for name in ("big", "twin-a", "twin-b"):
        api.delete("nodes", name)
    shadow = start_shadow(api, ShadowOptions(), ServingOptions(secure_port=0))
    seen: list[Verdict] = []
    assert shadow.monitor is not None
    shadow.monitor.on_verdict = seen.append
    api.create(small_pod("victim", "1500m"))
    real.bind("victim", "small")
    api.create(small_pod("preemptor", "1500m", priorityClassName="high"))
    real.fail("preemptor", "0/1 nodes are available: 1 Insufficient cpu.", nominated="small")
    shadow.wait_observed(2)
    shadow.halt()
    assert [(v.pod, v.result) for v in seen] == [("default/victim", AGREED), ("default/preemptor", AGREED)]
    assert api.get("pods", "victim", "default")["spec"]["nodeName"] == "small"


# -------------------------------------------------------------------------- read-only
def test_the_read_only_client_refuses_a_write_before_sending_it(api: LocalApiServer) -> None:
    client = ReadOnlyApiClient(ClusterConfig(server=api.url), qps=0, user_agent=AGENT)
    api.create(small_pod("p"))
    cluster = LiveCluster(client)
    try:
        with pytest.raises(KubeschedError, match="read-only: refused create pods/binding"):
            from kubesched.objects.parse import parse_pod

            cluster.bind(parse_pod(api.get("pods", "p", "default")), "big")
        with pytest.raises(KubeschedError, match="read-only: refused delete pods"):
            client.request("delete", "pods", namespace="default", name="p")
    finally:
        client.close()
    assert not api.calls(user_agent=AGENT)


def test_a_scheduler_name_without_a_profile_is_a_config_error(api: LocalApiServer) -> None:
    client = ApiClient(ClusterConfig(server=api.url), qps=0)
    try:
        with pytest.raises(ConfigError, match="--scheduler-name nope: no profile of the configuration"):
            ShadowMonitor(None, LiveCluster(client), scheduler_names=["nope"])
    finally:
        client.close()


def test_the_tally_keeps_counting_past_the_recorded_disagreements(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubesched.live import shadow as module

    monkeypatch.setattr(module, "MAX_RECORDED_DISAGREEMENTS", 2)
    tally = ShadowTally()
    for i in range(3):
        tally.add(Verdict(f"default/p{i}", "bound", DISAGREED, "a", "b", ("b",), "why"))
    tally.add(Verdict("default/q", "bound", AGREED, "a", "a", ("a",), "same"))
    summary = tally.summary()
    assert (summary["observed"], summary["agreed"], len(summary["disagreed"]), summary["disagreedOmitted"]) == (
        4, 1, 2, 1)


# -------------------------------------------------------------------------- the command
def test_sigterm_writes_the_summary_and_exits_0(api: LocalApiServer, real: RealScheduler, tmp_path: Path) -> None:
    out = tmp_path / "shadow.json"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen([sys.executable, "-m", "kubesched", "shadow", f"--master={api.url}",
                             f"--output={out}", f"--metrics-port={port}"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            try:
                return httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200
            except httpx.HTTPError:
                return proc.poll() is not None

        wait_until(ready, 30.0, "the shadow's /readyz")
        assert proc.poll() is None, proc.communicate()
        api.create(small_pod("worse"))
        real.bind("worse", "small")

        def observed() -> bool:
            text = httpx.get(f"{url}/metrics", timeout=1.0).text
            return 'kubesched_shadow_decisions_total{decision="bound",result="disagreed"} 1.0' in text

        wait_until(observed, 15.0, "the decision in /metrics")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15.0)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    summary = json.loads(out.read_text())
    assert (summary["observed"], summary["agreed"], summary["tied"]) == (1, 0, 0)
    (d,) = summary["disagreed"]
    assert (d["pod"], d["node"], d["predicted"]) == ("default/worse", "small", "big")
    assert "disagreed: default/worse bound (real node small, kubesched big)" in stderr
    assert "big *" in stderr, "the explain table marks kubesched's pick"
    assert "observed 1: 0 agreed, 0 tied, 1 disagreed" in stderr
    assert {c.verb for c in api.calls(user_agent=AGENT)} <= {"get", "list", "watch"}


def test_a_bad_flag_value_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubesched.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "profiles:\n- schedulerName: a\n")
    result = CliRunner().invoke(main, ["shadow", "--master=http://127.0.0.1:1", f"--config={bad}",
                                       "--metrics-port=0", "--scheduler-name=b"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1].startswith("error: --scheduler-name b: no profile")


@pytest.mark.parametrize("version", ["1.30", "1.36"], ids=lambda v: f"deciding as {v}")
def test_each_release_judges_with_its_own_semantics(api: LocalApiServer, real: RealScheduler, version: str) -> None:
    shadow = start_shadow(api, ShadowOptions(kube_version=version), ServingOptions(secure_port=0))
    assert shadow.monitor is not None
    assert shadow.monitor.features.oracle.startswith(f"kube-scheduler v{version}.")
    steps: list[tuple[str, str, dict[str, Any]]] = [("web", "big", {}), ("twin", "twin-b", {"nodeSelector": TWINS}),
                                                    ("worse", "small", {})]
    for name, target, spec in steps:
        api.create(small_pod(name, **spec))
        real.bind(name, target)
    shadow.wait_observed(3)
    summary = shadow.halt()
    assert (summary["observed"], summary["agreed"], summary["tied"]) == (3, 1, 1)
    assert [(d["pod"], d["predicted"]) for d in summary["disagreed"]] == [("default/worse", "big")]
