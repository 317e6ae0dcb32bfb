"""docs/extender.md's snippets run as written, the GPU example extender behaves as documented,
and `kubesched extender serve` serves an app from a module path."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from builders import make_node, make_pod
from click.testing import CliRunner

from kubesched.cli import main
from kubesched.config.types import Extender, ExtenderManagedResource
from kubesched.extender import HTTPExtender
from kubesched.extender.server import ExtenderApp, ServerThread, load_app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extender.md"
GPU_EXAMPLE = ROOT / "examples" / "extenders" / "gpu_extender.py"


def _python_block_after(heading: str) -> str:
    text = DOC.read_text()
    section = text[text.index(heading):]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m is not None
    return m.group(1)


ZONED = [make_node().name(f"n{i}").label("zone", z).capacity(cpu=str(c), pods=110).obj()
         for i, (z, c) in enumerate([("a", 2), ("b", 8), ("a", 32)], start=1)]


def test_the_twenty_line_extender_runs_as_written() -> None:
    snippet = _python_block_after("## Write an extender in 20 lines")
    assert len(snippet.rstrip("\n").splitlines()) <= 20
    ns: dict[str, Any] = {}
    exec(compile(snippet, str(DOC), "exec"), ns)
    app = ns["app"]
    assert isinstance(app, ExtenderApp)
    pod = make_pod().name("p").label("zone", "a").obj()
    with ServerThread(app) as srv, HTTPExtender(Extender(url_prefix=srv.url + "/scheduler", filter_verb="filter",
                                                         prioritize_verb="prioritize", weight=1)) as ext:
        kept, failed, _ = ext.filter(pod, ZONED)
        assert [n.meta.name for n in kept] == ["n1", "n3"]
        assert failed == {"n2": "node is in zone 'b', pod wants 'a'"}
        assert ext.prioritize(pod, kept) == ([("n1", 2), ("n3", 10)], 1)
        assert app.extender_config(srv.url + "/scheduler") == {
            "urlPrefix": srv.url + "/scheduler", "filterVerb": "filter", "prioritizeVerb": "prioritize",
            "weight": 1, "nodeCacheCapable": False, "ignorable": False, "httpTimeout": "5s"}


def test_the_testing_snippet_runs_as_written() -> None:
    ns: dict[str, Any] = {}
    exec(compile(_python_block_after("## Write an extender in 20 lines"), str(DOC), "exec"), ns)
    ns.update(pod=make_pod().name("p").label("zone", "b").obj(), nodes=ZONED)
    exec(compile(_python_block_after("## Testing an extender"), str(DOC), "exec"), ns)
    assert [n.meta.name for n in ns["kept"]] == ["n2"]
    assert set(ns["failed"]) == {"n1", "n3"} and ns["unresolvable"] == {}


GPU = "example.com/gpu"
GPU_NODES = [
    make_node().name("cpu-only").capacity(cpu="8", pods=110).obj(),
    make_node().name("one-gpu").capacity_map({"cpu": "8", GPU: 1, "pods": 110}).label("example.com/gpu-model", "a100")
    .obj(),
    make_node().name("four-gpus").capacity_map({"cpu": "8", GPU: 4, "pods": 110})
    .label("example.com/gpu-model", "a100").obj(),
    make_node().name("two-gpus").capacity_map({"cpu": "8", GPU: 2, "pods": 110}).label("example.com/gpu-model", "a100")
    .obj(),
    make_node().name("maintenance").capacity_map({"cpu": "8", GPU: 8, "pods": 110})
    .label("example.com/gpu-maintenance", "true").obj(),
    make_node().name("other-model").capacity_map({"cpu": "8", GPU: 8, "pods": 110})
    .label("example.com/gpu-model", "h100").obj(),
]


def test_gpu_example_filters_and_scores() -> None:
    app = load_app(f"{GPU_EXAMPLE}:app")
    gpu_pod_manifest = make_pod().name("train").container(requests={GPU: 2}, limits={GPU: 2}).manifest()
    gpu_pod_manifest["metadata"]["annotations"] = {"example.com/gpu-model": "a100"}
    from kubesched.objects.parse import parse_pod

    gpu_pod = parse_pod(gpu_pod_manifest)
    cpu_pod = make_pod().name("web").req(cpu="1").obj()
    cfg = Extender(filter_verb="filter", prioritize_verb="prioritize", weight=2,
                   managed_resources=(ExtenderManagedResource(GPU),))
    with ServerThread(app) as srv:
        import dataclasses

        with HTTPExtender(dataclasses.replace(cfg, url_prefix=srv.url + "/scheduler")) as ext:
            assert not ext.is_interested(cpu_pod) and ext.is_interested(gpu_pod)
            kept, failed, unresolvable = ext.filter(gpu_pod, GPU_NODES)
            assert [n.meta.name for n in kept] == ["four-gpus", "two-gpus"]
            assert failed == {"cpu-only": "node has 0 GPU(s), pod needs 2", "one-gpu": "node has 1 GPU(s), pod needs 2",
                              "other-model": "node's GPU model is not a100"}
            assert unresolvable == {"maintenance": "GPUs under maintenance"}
            assert ext.prioritize(gpu_pod, kept) == ([("four-gpus", 8), ("two-gpus", 10)], 2)
            assert ext.prioritize(cpu_pod, GPU_NODES[:2]) == ([("cpu-only", 10), ("one-gpu", 0)], 2)


# ------------------------------------------------------------------------------ the CLI
def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


def test_cli_serves_an_extender_from_a_file() -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kubesched.cli", "extender", "serve", f"{GPU_EXAMPLE}:app",
                             "--port", str(port), "--host", "127.0.0.1", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).text == "ok":
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"extender did not come up: {out}")
            time.sleep(0.1)
        cfg = Extender(url_prefix=f"http://127.0.0.1:{port}/scheduler", filter_verb="filter")
        pod = make_pod().name("train").container(requests={GPU: 1}, limits={GPU: 1}).obj()
        with HTTPExtender(cfg) as ext:
            kept, _, _ = ext.filter(pod, GPU_NODES)
        assert [n.meta.name for n in kept] == ["one-gpu", "four-gpus", "two-gpus", "other-model"]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout:
            proc.stdout.close()


@pytest.mark.parametrize(
    ("target", "message"),
    [("no_colon", "expected MODULE:ATTRIBUTE"),
     ("kubesched_no_such_module_xyz:app", "cannot import 'kubesched_no_such_module_xyz'"),
     (f"{GPU_EXAMPLE}:nope", "has no attribute 'nope'"),
     ("missing/file.py:app", "no such file")],
    ids=["no attribute part", "an unknown module", "an unknown attribute", "a missing file"],
)
def test_cli_rejects_bad_targets_in_one_line(target: str, message: str) -> None:
    result = CliRunner().invoke(main, ["extender", "serve", target, "--port", "1"])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
