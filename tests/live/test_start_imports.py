"""What ``kubesched run`` imports before it can schedule (issue 21 item 3: a restarted
scheduler's time to its first bind counts every module). Not a timing test: the modules
themselves, in a fresh interpreter (``sys.modules`` at its exit: ``python -X importtime`` does
not see what importlib.import_module imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import kubesched

ROOT = Path(kubesched.__file__).resolve().parent.parent

# The modules of the commands other than `run` (kubesched.cli._COMMAND_MODULES), sorted.
OTHER_COMMANDS = ("kubesched.cli.autoscale", "kubesched.cli.bench", "kubesched.cli.capacity", "kubesched.cli.compare",
                  "kubesched.cli.config", "kubesched.cli.extender", "kubesched.cli.pack", "kubesched.cli.shadow",
                  "kubesched.cli.simulate", "kubesched.cli.snapshot")

# Never on the way to the first bind: the web server of health and metrics (started once the
# scheduler schedules), httpx (the API client's own transport carries every request), the CLI's
# other commands and what they use (rich, the simulator, the what-if engine, the solvers), the
# test doubles; importlib.metadata (and the zipfile it brings) unless a distribution declares a
# kubesched plugin (kubesched._runtime.registry); prometheus_client and the http.server its
# exposition brings (the metrics are built once the scheduler schedules: SchedulerMetrics' deferred).
# The CLI's other commands: their modules (kubesched.cli._COMMAND_MODULES), with their click
# options, and kubesched.cli.snapshot, whose --kubeconfig the what-if commands take.
# The HTTP extenders' client unless the configuration names one (kubesched.extender), tempfile
# unless a kubeconfig carries an inline client certificate. ssl unless the API server or serving
# uses TLS, subprocess unless a kubeconfig runs an exec credential plugin, http.client (and the
# email package it brings) unless a reply is malformed (the API client's transport raises its
# exception classes).
NEVER = ("ssl", "subprocess", "http.client", "email.parser", "importlib.metadata", "zipfile", "prometheus_client", "http.server", "kubesched.extender", "tempfile",
         "uvicorn", "starlette", "anyio", "h11", "httpx", "httpcore", "rich", "pydantic", "hypothesis", "highspy",
         "jinja2", "cryptography", "kubesched.simulation", "kubesched.timeline", "kubesched.whatif",
         "kubesched.testing", "kubesched.bench", "kubesched.soak", *OTHER_COMMANDS,
         "kubesched.live.shadow", "kubesched.extender.server", "kubesched.config.policy",
         # plugins no default profile enables (kubesched.plugins.registry defers their factories)
         "kubesched.plugins.selectorspread", "kubesched.plugins.serviceaffinity", "kubesched.plugins.nodelabel",
         "kubesched.plugins.nodepreferavoidpods", "kubesched.plugins.noderesources_legacy",
         "kubesched.plugins.gangscheduling", "kubesched.plugins.nodedeclaredfeatures",
         # DRA's allocator and the CEL interpreter: only once a pod has a claim to allocate, a
         # device is parsed or a selector compiled (a cluster without DRA objects needs neither)
         "kubesched.plugins.dynamicresources.allocator", "kubesched.objects.cel")
# Not before the informers' first LISTs are sent (kubesched.cluster.live.FirstLists): the
# scheduler itself, imported while the API server answers them.
AFTER_FIRST_LISTS = ("numpy", "kubesched.live.runner", "kubesched.scheduler", "kubesched.plugins.registry",
                     "kubesched._cache", "kubesched._queue", "kubesched.framework")


def imported(code: str) -> set[str]:
    """The modules a fresh interpreter has imported once it has run ``code``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "modules.json"
        dump = f"import atexit, json, sys\natexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        subprocess.run([sys.executable, "-c", dump + code], env=env, capture_output=True, check=True, timeout=120)
        modules: list[str] = json.loads(out.read_text())
    return set(modules)


# kubesched/__init__.py registers a stand-in for httpx's command line (not httpx): not an import.
STAND_INS = {"httpx._main"}


def offending(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules - STAND_INS if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_the_run_command_and_its_flags_import_neither_the_scheduler_nor_anything_heavy() -> None:
    """What `kubesched run` imports before it sends the informers' first LISTs: the command
    line, the configuration, the API client."""
    modules = imported("import kubesched.cli, kubesched.live.command")
    assert "kubesched.live.command" in modules and "kubesched.cluster.live" in modules
    assert offending(modules, NEVER + AFTER_FIRST_LISTS) == []


def test_the_scheduler_path_imports_nothing_heavy_it_does_not_use() -> None:
    """Everything `kubesched run` imports until it schedules: the scheduler and every plugin,
    but still no web server, httpx or what the other commands use."""
    modules = imported("import kubesched.cli, kubesched.live.command, kubesched.live.runner\n"
                       "from kubesched._runtime.registry import full_registry\n"
                       "from kubesched.features import features_for\n"
                       "full_registry((), features=features_for(None))")
    assert {"numpy", "kubesched.live.runner", "kubesched.scheduler"} <= modules
    assert offending(modules, NEVER) == []



def test_the_command_line_builds_the_run_command_only() -> None:
    """Importing the command line defines `kubesched` and `run` only: the other commands'
    modules (their click options) and the click path types they take wait until one is asked
    for."""
    modules = imported("import kubesched.cli\n"
                       "assert not kubesched.cli.path_type.cache_info().currsize, 'a click.Path was made'")
    assert offending(modules, OTHER_COMMANDS) == []


@pytest.mark.parametrize("argv", [["run", "--help"], ["--help"]], ids=["run's help", "the command list"])
def test_the_command_line_loads_the_other_commands_only_when_asked(argv: list[str]) -> None:
    """`kubesched --help` lists every command (importing their modules); `kubesched run`
    imports none of them."""
    modules = imported(f"import sys; sys.argv = ['kubesched', *{argv!r}]\n"
                       "from kubesched._entry import main\n"
                       "try:\n    main()\nexcept SystemExit:\n    pass")
    others = offending(modules, OTHER_COMMANDS)
    assert others == ([] if argv[0] == "run" else list(OTHER_COMMANDS))
