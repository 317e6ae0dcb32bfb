"""Bad input gets a clear error naming the file, document and field, never a traceback.

Property tests start from valid documents (the examples, ``config print-defaults``) and
mutate them structurally: a value at a random path replaced by one of another type, a key
deleted, a value duplicated into a list, a value nested deeply, a stray key added. Every
loader must then either succeed or raise a KubeschedError naming the file (and, for
manifests, the document); a document that loads must simulate without crashing. The
crashes found are kept as explicit regression cases at the end.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cli import main
from kubesched.config import load_config, parse_config
from kubesched.config.policy import load_policy, parse_policy
from kubesched.errors import KubeschedError
from kubesched.objects import load_manifests
from kubesched.simulation import Simulator

ROOT = Path(__file__).resolve().parent.parent
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _docs(*files: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in files:
        for d in yaml.safe_load_all((ROOT / f).read_text()):
            if not d:
                continue
            if str(d.get("kind", "")).endswith("List"):
                out.extend({"kind": d["kind"][: -len("List")], "apiVersion": d.get("apiVersion"), **i} for i in d["items"])
            else:
                out.append(d)
    return out


MANIFESTS = _docs("examples/cluster/nodes.yaml", "examples/cluster/workloads.yaml", "examples/dump/all.yaml",
                  "examples/dump/extra.yaml", "examples/dump/nodes.yaml", "examples/whatif/cluster.yaml",
                  "examples/whatif/deployment.yaml")
CLUSTER = _docs("examples/cluster/nodes.yaml", "examples/cluster/workloads.yaml")
POLICY = _docs("examples/policy/policy.yaml")[0]


def _defaults() -> dict[str, Any]:
    result = CliRunner().invoke(main, ["config", "print-defaults"])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.output)
    assert isinstance(data, dict)
    return data


CONFIG = _defaults()

# ---------------------------------------------------------------- mutations
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-1, 0, 2**31, 2**63, -(2**63) - 1, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e309, -1e309, -0.0, 1.5]),
    _text, st.sampled_from(["", "\x00\x07\u2603", "-1", "1e309", "NaN", "1Gi", "-5m", "0.0001m", "99999999999999999999Ei",
                            "2024-13-45T99:99:99Z", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "a\nb"]),
)
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.one_of(_text, st.integers(), st.booleans()), inner, max_size=3)),
    max_leaves=6)


def _paths(o: Any, p: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield p
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _paths(v, (*p, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _paths(v, (*p, i))


@st.composite
def mutated(draw: st.DrawFn, bases: list[dict[str, Any]] | dict[str, Any], max_mutations: int = 3) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(bases)) if isinstance(bases, list) else bases)
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        paths = list(_paths(doc))[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "nest", "add"]))
        if op == "replace":
            parent[key] = draw(_values)
        elif op == "delete":
            del parent[key]
        elif op == "duplicate":
            parent[key] = [parent[key], copy.deepcopy(parent[key])]
        elif op == "nest":
            value = parent[key]
            for _ in range(draw(st.sampled_from([2, 30, 150]))):
                value = [value] if draw(st.booleans()) else {"x": value}
            parent[key] = value
        elif isinstance(parent, dict):
            parent[draw(st.one_of(_text, st.integers(), st.booleans(), st.none()))] = draw(_values)
    return doc


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _write(path: Path, docs: list[Any]) -> None:
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")


def _load_or_clear_error(fn: Callable[[], Any], file: str, document: bool) -> Any:
    try:
        return fn()
    except KubeschedError as e:
        assert file in str(e), f"error does not name the file: {e}"
        if document:
            assert "document " in str(e), f"error does not name the document: {e}"
        assert "\n" not in str(e).strip(), f"error is not one line: {e!r}"
        return None


# ---------------------------------------------------------------- properties
@FUZZ
@given(doc=mutated(MANIFESTS))
def test_mutated_manifest_loads_or_fails_clearly(doc: Any, workdir: Path) -> None:
    f = workdir / "manifest.yaml"
    _write(f, [doc])
    _load_or_clear_error(lambda: load_manifests([f]), str(f), document=True)


@FUZZ
@given(doc=mutated(CONFIG))
def test_mutated_configuration_loads_or_fails_clearly(doc: Any) -> None:
    _load_or_clear_error(lambda: parse_config(doc, file="fuzz-config.yaml"), "fuzz-config.yaml", document=False)


@FUZZ
@given(doc=mutated(POLICY))
def test_mutated_policy_loads_or_fails_clearly(doc: Any) -> None:
    _load_or_clear_error(lambda: parse_policy(doc, file="fuzz-policy.yaml"), "fuzz-policy.yaml", document=False)


@settings(FUZZ, max_examples=100)
@given(doc=mutated(CONFIG, max_mutations=1), policy=mutated(POLICY, max_mutations=1))
def test_mutated_files_read_from_disk_fail_clearly(doc: Any, policy: Any, workdir: Path) -> None:
    c, p = workdir / "config.yaml", workdir / "policy.yaml"
    _write(c, [doc])
    _write(p, [policy])
    _load_or_clear_error(lambda: load_config(c), str(c), document=False)
    _load_or_clear_error(lambda: load_policy(p), str(p), document=False)


@FUZZ
@given(index=st.integers(min_value=0, max_value=len(CLUSTER) - 1), doc=st.data())
def test_a_cluster_that_loads_simulates_without_crashing(index: int, doc: st.DataObject, workdir: Path) -> None:
    docs = list(CLUSTER)
    docs[index] = doc.draw(mutated(CLUSTER[index], max_mutations=1))
    f = workdir / "cluster.yaml"
    _write(f, docs)
    objs = _load_or_clear_error(lambda: load_manifests([f]), str(f), document=True)
    if objs is not None:
        try:
            Simulator(objs, deterministic=True).run()
        except KubeschedError:
            pass


@settings(FUZZ, max_examples=30)
@given(doc=mutated(CLUSTER, max_mutations=2))
def test_cli_simulate_exits_0_or_2_with_one_line(doc: Any, workdir: Path) -> None:
    f = workdir / "cli.yaml"
    _write(f, [*CLUSTER, doc])
    result = CliRunner().invoke(main, ["simulate", str(f), "--deterministic"])
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# ---------------------------------------------------------------- regressions
_DEEP = "[" * 5000 + "]" * 5000
_DEPLOYMENT = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1, selector: {matchLabels: "
               "{a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]%s}}}\n")


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(_DEPLOYMENT % ", 1: x", None, id="a pod template with an integer key among string keys loads"),
    pytest.param(_DEPLOYMENT % (", x: " + "[" * 150 + "]" * 150), "document 0: spec.template.spec.x[0][0]",
                 id="a pod template nested 150 deep is refused naming the field"),
    pytest.param(_DEPLOYMENT % (", x: " + _DEEP), "nested deeper than 100 levels",
                 id="a manifest nested 5000 deep is refused naming the file"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {a: " + "[" * 200_000 + "]" * 200_000 + "}}\n",
                 "nested deeper than 100 levels", id="a manifest nested 200000 deep is refused, not a segfault"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nx:\n  " + "- " * 200_000 + "x\n",
                 "nested deeper than 100 levels", id="a block sequence nested 200000 deep is refused"),
])
def test_manifest_regressions(text: str, expected: str | None, workdir: Path) -> None:
    f = workdir / "regression.yaml"
    f.write_text(text, encoding="utf-8")
    if expected is None:
        load_manifests([f])
    else:
        with pytest.raises(KubeschedError, match=r"regression\.yaml") as e:
            load_manifests([f])
        assert expected in str(e.value)


@pytest.mark.parametrize(("loader", "text"), [
    pytest.param(load_config, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 f"profiles: {_DEEP}\n", id="a configuration nested 5000 deep is refused"),
    pytest.param(load_policy, f"kind: Policy\napiVersion: v1\npredicates: {_DEEP}\n",
                 id="a YAML policy nested 5000 deep is refused"),
    pytest.param(load_policy, f'{{"kind": "Policy", "apiVersion": "v1", "predicates": {_DEEP}}}',
                 id="a JSON policy nested 5000 deep is refused"),
])
def test_config_regressions(loader: Callable[[Path], Any], text: str, workdir: Path) -> None:
    f = workdir / "regression-config.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(KubeschedError, match="nested too deeply") as e:
        loader(f)
    assert str(f) in str(e.value)


@pytest.mark.parametrize(("parse", "doc"), [
    pytest.param(parse_policy, {"kind": "Policy", "apiVersion": "v1", "\n": None},
                 id="a policy field named by a newline is reported on one line"),
    pytest.param(parse_config, {"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1",
                                "a\nb": 1}, id="a configuration field with a newline is reported on one line"),
])
def test_unknown_field_errors_stay_on_one_line(parse: Callable[..., Any], doc: Any) -> None:
    with pytest.raises(KubeschedError) as e:
        parse(doc, file="f.yaml")
    assert "\n" not in str(e.value)
    assert 'unknown field "' in str(e.value)
