"""Out-of-tree plugins through the ``kubesched.plugins`` entry-point group.

The distribution is tests/fixtures/entrypoint_plugin (an installable project). Rather than
pip-installing it, each test lays out what an installation leaves on disk — the package and
a ``*.dist-info`` with METADATA and entry_points.txt generated from the fixture's
pyproject.toml — in a temporary directory put on sys.path: importlib.metadata finds it
exactly as it finds an installed distribution (no network, no build, milliseconds)."""

from __future__ import annotations

import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from simkit import cluster, config, node, pod

from kubesched._runtime.registry import ENTRY_POINT_GROUP, full_registry, out_of_tree_registry
from kubesched.cli import main
from kubesched.errors import PluginError
from kubesched.simulation import Simulator

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "entrypoint_plugin"
PACKAGE = "kubesched_example_ep"


class SitePackages:
    """A directory on sys.path into which distributions are "installed"."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def install(self, name: str, version: str, entry_points: dict[str, str], *, package: bool = True) -> None:
        dist = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
        (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
        if package and not (self.root / PACKAGE).exists():
            shutil.copytree(FIXTURE / PACKAGE, self.root / PACKAGE)

    def install_fixture(self) -> None:
        """The fixture distribution, as its pyproject.toml declares it."""
        project = tomllib.loads((FIXTURE / "pyproject.toml").read_text())["project"]
        self.install(project["name"], project["version"], project["entry-points"][ENTRY_POINT_GROUP])


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SitePackages]:
    root = tmp_path / "site-packages"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield SitePackages(root)
    for mod in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[mod]


def test_the_fixture_declares_its_plugin_in_the_kubesched_plugins_group() -> None:
    project = tomllib.loads((FIXTURE / "pyproject.toml").read_text())["project"]
    assert project["entry-points"] == {"kubesched.plugins": {"MyPlugin": "kubesched_example_ep:new"}}


def test_an_installed_plugin_is_in_the_full_registry(site: SitePackages) -> None:
    assert "MyPlugin" not in full_registry()
    site.install_fixture()
    assert list(out_of_tree_registry()) == ["MyPlugin"]
    reg = full_registry()
    assert "MyPlugin" in reg and "NodeResourcesFit" in reg
    assert "MyPlugin" not in full_registry(entry_points=False)


@pytest.mark.parametrize(
    ("plugin_config", "expected"),
    [(None, "n2"), ({"label": "disk", "value": "ssd"}, "n3")],
    ids=["the plugin scores with its default args", "pluginConfig args reach it typed"],
)
def test_an_installed_plugin_runs_in_a_simulation(site: SitePackages, plugin_config: dict[str, str] | None,
                                                  expected: str) -> None:
    site.install_fixture()
    profile: dict[str, object] = {"plugins": {"score": {"enabled": [{"name": "MyPlugin", "weight": 50}]}}}
    if plugin_config is not None:
        profile["pluginConfig"] = [{"name": "MyPlugin", "args": plugin_config}]
    nodes = [node("n1"), node("n2", **{"example.com/preferred": "true"}), node("n3", disk="ssd")]
    sim = Simulator(cluster(nodes, [pod("p")]), config(profile), registry=full_registry(), deterministic=True)
    result = sim.run()
    assert result.final == {"default/p": expected}
    scores = result.steps[0].attempt.scores
    assert scores is not None and scores.as_dict()[expected]["MyPlugin"] == 100 * 50


def test_the_cli_picks_up_an_installed_plugin_without_any_flag(site: SitePackages, tmp_path: Path) -> None:
    site.install_fixture()
    (tmp_path / "cluster.yaml").write_text("""apiVersion: v1
kind: Node
metadata: {name: plain}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: chosen, labels: {example.com/preferred: "true"}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: x}]}
""")
    (tmp_path / "config.yaml").write_text("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score: {enabled: [{name: MyPlugin, weight: 100}]}
""")
    r = CliRunner().invoke(main, ["simulate", str(tmp_path / "cluster.yaml"), "--config", str(tmp_path / "config.yaml"),
                                  "-o", "json"])
    assert r.exit_code == 0, r.output
    assert '"default/p": "chosen"' in r.output


@pytest.mark.parametrize(
    ("entry_points", "specs", "message"),
    [
        ({"NodeResourcesFit": "kubesched_example_ep:new"}, (),
         "a plugin named NodeResourcesFit already exists: an out-of-tree plugin cannot take the name of an in-tree "
         "plugin"),
        ({"MyPlugin": "kubesched_example_ep:new"}, (),
         # (in the order importlib.metadata finds the two distributions)
         "a plugin named MyPlugin already exists: entry point MyPlugin = kubesched_example_ep:new \\(group "
         "kubesched.plugins, distribution kubesched-(copy|example-ep)\\) and entry point MyPlugin = "
         "kubesched_example_ep:new \\(group kubesched.plugins, distribution kubesched-(copy|example-ep)\\) both "
         "register it"),
        ({}, ("kubesched_example_ep:new",),
         "a plugin named MyPlugin already exists: --plugin kubesched_example_ep:new and entry point MyPlugin"),
    ],
    ids=["an out-of-tree plugin may not take an in-tree name", "two distributions may not register the same name",
         "a --plugin may not take the name of an installed plugin"],
)
def test_a_duplicate_plugin_name_is_rejected_with_a_clear_error(site: SitePackages, entry_points: dict[str, str],
                                                                specs: tuple[str, ...], message: str) -> None:
    site.install_fixture()
    if entry_points:
        site.install("kubesched-copy", "1.0", entry_points)
    with pytest.raises(PluginError, match=message):
        full_registry(specs)


def test_a_broken_entry_point_is_reported_not_a_crash(site: SitePackages) -> None:
    site.install("kubesched-broken", "0.1", {"Broken": "no_such_module_here:new"}, package=False)
    with pytest.raises(PluginError, match=r"entry point Broken = no_such_module_here:new \(group kubesched.plugins, "
                                          r"distribution kubesched-broken\): cannot load: ModuleNotFoundError"):
        full_registry()


def _lay_out(root: Path, layout: str) -> None:
    """An installation's metadata on disk, as ``layout`` names it."""
    group_file = f"[{ENTRY_POINT_GROUP}]\nMyPlugin = {PACKAGE}:new\n"
    if layout == "dist-info":
        SitePackages(root).install("kubesched-example-ep", "0.1.0", {"MyPlugin": f"{PACKAGE}:new"})
    elif layout == "egg-info":
        info = root / "kubesched_example_ep.egg-info"
        info.mkdir()
        (info / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: kubesched-example-ep\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text(group_file)
    elif layout == "egg directory":
        egg = root / "kubesched_example_ep-0.1.0-py3.11.egg"
        (egg / "EGG-INFO").mkdir(parents=True)
        (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: kubesched-example-ep\nVersion: 0.1.0\n")
        (egg / "EGG-INFO" / "entry_points.txt").write_text(group_file)
    elif layout == "other groups only":
        SitePackages(root).install("some-tool", "1.0", {}, package=False)
        (root / "some_tool-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nsome-tool = x:main\n")
    elif layout == "legacy one-file egg-info":
        (root / "old_thing-1.0.egg-info").write_text("Metadata-Version: 1.0\nName: old-thing\nVersion: 1.0\n")


@pytest.mark.parametrize(
    ("layout", "declares"),
    [("dist-info", True), ("egg-info", True), ("egg directory", True), ("other groups only", False),
     ("legacy one-file egg-info", False)],
    ids=["a wheel's dist-info declaring the group is seen", "a setuptools egg-info declaring it is seen",
         "an egg directory's EGG-INFO declaring it is seen", "a distribution declaring other groups only is not",
         "a legacy one-file egg-info declares nothing"])
def test_the_quick_look_for_entry_points_agrees_with_importlib_metadata(site: SitePackages, layout: str,
                                                                        declares: bool) -> None:
    """importlib.metadata (~30 ms to import) is used only when some distribution may declare a
    kubesched plugin; the quick look never misses one importlib.metadata finds."""
    from importlib.metadata import entry_points

    from kubesched._runtime.registry import _may_declare_entry_points

    if _may_declare_entry_points(ENTRY_POINT_GROUP):
        pytest.skip("this environment has a distribution declaring kubesched plugins already")
    egg_root = site.root
    _lay_out(egg_root, layout)
    if layout == "egg directory":  # an egg is put on sys.path itself
        sys.path.insert(0, str(next(egg_root.glob("*.egg"))))
    try:
        found = list(entry_points(group=ENTRY_POINT_GROUP))
        assert bool(found) is declares
        assert _may_declare_entry_points(ENTRY_POINT_GROUP) is declares
    finally:
        if layout == "egg directory":
            sys.path.pop(0)


def test_a_zip_on_the_path_or_another_distribution_finder_counts_as_a_possible_declaration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubesched._runtime.registry import _may_declare_entry_points

    if _may_declare_entry_points(ENTRY_POINT_GROUP):
        pytest.skip("this environment has a distribution declaring kubesched plugins already")
    archive = tmp_path / "plugins.zip"
    shutil.make_archive(str(archive.with_suffix("")), "zip", tmp_path)
    monkeypatch.syspath_prepend(str(archive))
    assert _may_declare_entry_points(ENTRY_POINT_GROUP)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(archive)])
    assert not _may_declare_entry_points(ENTRY_POINT_GROUP)

    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, *args: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    assert _may_declare_entry_points(ENTRY_POINT_GROUP)


def test_the_registry_skips_importlib_metadata_when_nothing_declares_a_plugin() -> None:
    """In a fresh interpreter: building the full registry imports importlib.metadata only when
    a distribution declares a kubesched plugin."""
    import subprocess

    code = ("import sys\nfrom kubesched._runtime.registry import full_registry, _may_declare_entry_points\n"
            "full_registry()\nprint(_may_declare_entry_points('kubesched.plugins'), 'importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out in (["False", "False"], ["True", "True"])
