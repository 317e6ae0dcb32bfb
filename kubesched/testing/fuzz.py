"""Fuzzing kubesched's inputs: hypothesis strategies that start from valid documents and break
them, and the contract every generated input is checked against.

Shared by ``tests/test_fuzz_inputs.py`` (a small sample in CI) and ``scripts/fuzz.py`` (10,000
cases and more). Needs ``hypothesis`` (a test dependency).

Four targets (:data:`TARGETS`):

- ``manifests``: Kubernetes manifests (the examples' nodes, pods, workloads, volumes, ...,
  alone, inside a cluster, or in a ``kind: List``) written as a file and read by
  :func:`~kubesched.objects.load_manifests`; a file that loads is simulated (the conformance
  procedure or the scheduling queue on its virtual clock, alternately) with the invariant
  checker on.
- ``config``: KubeSchedulerConfiguration files read by :func:`~kubesched.config.load_config`,
  then built as ``kubesched simulate`` builds them (:func:`build_profiles`: the extenders'
  clients, then every profile's framework).
- ``policy``: legacy Policy files (YAML, or JSON as they were usually written) read by
  :func:`~kubesched.config.policy.load_policy`, then built the same way.
- ``extender``: replies of an HTTP extender to filter, prioritize, preempt and bind (random
  JSON, mutated valid replies, broken bytes, other HTTP statuses, gzip), decoded by
  :class:`~kubesched.extender.HTTPExtender` through an in-memory transport and handled by the
  scheduler's side (``run_*_extenders``).

Mutations (:func:`mutated`): a value at a random path replaced by one of another type, a huge
number, an odd quantity or unicode text; a key deleted, renamed to another case or added; a
value duplicated into a list, wrapped in a list, turned from a map into a list or back, emptied
or nested deeply. File texts (:func:`file_text`) may also get a duplicated key, a truncation,
tabs, CRLF line ends, a byte-order mark or a byte that is not UTF-8.

The contract (:func:`contract_violation`): a case either succeeds, or raises a
:class:`~kubesched.errors.KubeschedError` whose message is one line, names the file, the
document (manifests) and the field (or, for a syntax error, the line). Extender replies are
judged by kube-scheduler's own words (Go's encoding/json and net/http errors, which name no
file): one non-empty line. Anything else — another exception, a hang-free crash, a message
over several lines — is a failure, reported with the input that reproduces it.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import yaml
from hypothesis import strategies as st

from kubesched.config import KubeSchedulerConfiguration, default_configuration, dump_config, load_config
from kubesched.config.policy import load_policy
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.errors import ConfigError, KubeschedError, ManifestError
from kubesched.extender.client import (
    HTTPExtender,
    Victims,
    run_bind_extenders,
    run_filter_extenders,
    run_preemption_extenders,
    run_prioritize_extenders,
)
from kubesched.framework import NodeInfo, Status
from kubesched.objects import ClusterObjects, Node, Pod, load_manifests
from kubesched.objects.parse import parse_node, parse_pod
from kubesched.plugins.registry import REGISTRY
from kubesched.simulation import Simulator
from kubesched.timeline import TimelineSimulator

TARGETS: tuple[str, ...] = ("manifests", "config", "policy", "extender")
Target = Literal["manifests", "config", "policy", "extender"]


# ======================================================================= base documents
def yaml_docs(*files: Path) -> list[dict[str, Any]]:
    """The documents of ``files``, a ``*List``'s items one by one."""
    out: list[dict[str, Any]] = []
    for path in files:
        for d in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not d:
                continue
            if str(d.get("kind", "")).endswith("List"):
                out.extend({"kind": d["kind"][: -len("List")], "apiVersion": d.get("apiVersion"), **i}
                           for i in d["items"])
            else:
                out.append(d)
    return out


_RICH_CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "parallelism": 8,
    "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 2,
    "podMaxBackoffSeconds": 20,
    "leaderElection": {"leaderElect": True, "leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s",
                       "resourceLock": "leases", "resourceName": "kubesched", "resourceNamespace": "kube-system"},
    "clientConnection": {"kubeconfig": "", "qps": 50, "burst": 100, "contentType": "application/json"},
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "packing", "percentageOfNodesToScore": 30,
         "plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]},
                     "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                               "disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
                     "preFilter": {"enabled": [{"name": "NodeAffinity"}]}},
         "pluginConfig": [
             {"name": "NodeResourcesFit", "args": {
                 "ignoredResources": ["example.com/foo"], "ignoredResourceGroups": ["example.org"],
                 "scoringStrategy": {"type": "RequestedToCapacityRatio",
                                     "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                                     "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                                            {"utilization": 100, "score": 10}]}}}},
             {"name": "NodeAffinity", "args": {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                 "nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a", "zone-b"]}]}]},
                 "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {
                     "matchExpressions": [{"key": "disktype", "operator": "Exists"}]}}]}}},
             {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5,
                                                   "ignorePreferredTermsOfExistingPods": True}},
             {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 20,
                                                    "minCandidateNodesAbsolute": 50}},
             {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 300}},
             {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [{"name": "cpu", "weight": 1}]}},
         ]},
        {"schedulerName": "spread",
         "pluginConfig": [{"name": "PodTopologySpread", "args": {
             "defaultingType": "List",
             "defaultConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                     "whenUnsatisfiable": "ScheduleAnyway"},
                                    {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname",
                                     "whenUnsatisfiable": "DoNotSchedule",
                                     "labelSelector": {"matchLabels": {"app": "web"}}}]}}]},
    ],
    "extenders": [
        {"urlPrefix": "http://127.0.0.1:1/scheduler", "filterVerb": "filter", "prioritizeVerb": "prioritize",
         "preemptVerb": "preempt", "bindVerb": "", "weight": 3, "enableHTTPS": False, "httpTimeout": "2s",
         "nodeCacheCapable": True, "ignorable": True,
         "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}]},
        {"urlPrefix": "https://127.0.0.1:2/scheduler", "filterVerb": "filter", "weight": 1,
         "tlsConfig": {"insecure": True, "serverName": "extender.test", "caFile": "", "certFile": "", "keyFile": "",
                       "caData": "", "certData": "", "keyData": ""}},
        {"urlPrefix": "https://127.0.0.1:3/scheduler", "bindVerb": "bind", "enableHTTPS": True,
         "tlsConfig": {"caData": "", "serverName": ""}},
    ],
}

_RICH_POLICY: dict[str, Any] = {
    "kind": "Policy",
    "apiVersion": "v1",
    "predicates": [
        {"name": "PodFitsResources"}, {"name": "MatchNodeSelector"}, {"name": "GeneralPredicates"},
        {"name": "RackAffinity", "argument": {"serviceAffinity": {"labels": ["rack"]}}},
        {"name": "ZoneLabel", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
    ],
    "priorities": [
        {"name": "LeastRequestedPriority", "weight": 1},
        {"name": "RackSpread", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
        {"name": "RequestedToCapacityRatioPriority", "weight": 3, "argument": {"requestedToCapacityRatioArguments": {
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
            "resources": [{"name": "cpu", "weight": 1}]}}},
        {"name": "EvenPodsSpreadPriority", "weight": 1},
    ],
    "extenders": [
        {"urlPrefix": "http://127.0.0.1:1/scheduler", "filterVerb": "filter", "prioritizeVerb": "prioritize",
         "weight": 2, "enableHttps": False, "httpTimeout": 1000000000, "nodeCacheCapable": True, "ignorable": True,
         "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": False}],
         "tlsConfig": {"Insecure": True}},
    ],
    "hardPodAffinitySymmetricWeight": 10,
    "alwaysCheckAllPredicates": False,
}


@dataclass(frozen=True)
class Bases:
    """The valid documents mutations start from."""

    manifests: list[dict[str, Any]]  # every kind the examples hold
    cluster: list[dict[str, Any]]  # a small cluster (nodes, running and pending pods) to simulate
    configs: list[dict[str, Any]]
    policies: list[dict[str, Any]]


def load_bases(root: Path) -> Bases:
    """The base documents: the examples of a kubesched checkout at ``root``, v1.30's default
    configuration, and a configuration and a Policy using every field."""
    ex = root / "examples"
    cluster = yaml_docs(ex / "cluster" / "nodes.yaml", ex / "cluster" / "workloads.yaml")
    manifests = cluster + yaml_docs(ex / "dump" / "all.yaml", ex / "dump" / "extra.yaml", ex / "dump" / "nodes.yaml",
                                    ex / "whatif" / "cluster.yaml", ex / "whatif" / "deployment.yaml",
                                    ex / "pack" / "cluster.yaml", ex / "pack" / "pending.yaml")
    configs = [dump_config(default_configuration()), _RICH_CONFIG,
               *yaml_docs(ex / "compare" / "leastallocated.yaml", ex / "compare" / "mostallocated.yaml")]
    policies = [*yaml_docs(ex / "policy" / "policy.yaml"), _RICH_POLICY]
    return Bases(manifests, cluster, configs, policies)


# ======================================================================= mutations
_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
UNICODE_SAMPLES: tuple[str, ...] = (
    "\x00\x07\u2603", "a\nb", "\t", "\u202eevil", "e\u0301", "\ufeff", "\u2028", "名前", "١٢٣", "１２", "𝟙",
    "ﬁ", "İ", "ß", "\U0001f600", "\x85", " ", "\u00a0", "a" * 300,
)
ODD_QUANTITIES: tuple[str, ...] = (
    "", "0", "-0", "+1", "1e3", "1E3", "1e-3", "1.5Gi", ".5", "5.", "1Ki1", "0x10", "0b1", "1_000", " 1", "1 Gi",
    "1e309", "1e-400", "9" * 40, "9" * 40 + "Ei", "99999999999999999999Ei", "1Ei", "8Ei", "9223372036854775807",
    "9223372036854775808", "-9223372036854775809", "-1", "-5m", "0.0001m", "0.000000001", "1n", "1u", "1m",
    "Infinity", "NaN", "inf", "-inf", "١", "１", "1ｍ", "²", "1e", "e3", "1.2.3", "1Gi ", "1gi", "1KI", "1k", "1K",
    "1M", "1Mi", "1e18", "1e19", "9.223372036854775807E18", "0.5", "1.0000000001", "1e+3", "1E+300", "1Pi",
)
_VALID_QUANTITIES: tuple[str, ...] = ("1", "100m", "2", "500Mi", "1Gi", "4", "0", "16Gi", "250m", "1k", "3")
HUGE_NUMBERS: tuple[int | float, ...] = (
    2**31, 2**31 - 1, -(2**31) - 1, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**30, 10**400,
    1e308, 1e309, -1e309, float("nan"), 5e-324, -0.0, 0.1, 1.5,
)
TIMESTAMPS: tuple[str, ...] = (
    "2024-13-45T99:99:99Z", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2024-01-01", "2024-01-01T00:00:00+25:00",
    "1970-01-01T00:00:00.999999999Z", "yesterday",
)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from(HUGE_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True), _text, st.sampled_from(ODD_QUANTITIES),
    st.sampled_from(UNICODE_SAMPLES), st.sampled_from(TIMESTAMPS),
)
_keys = st.one_of(_text, st.integers(), st.booleans(), st.sampled_from(["", "kind", "apiVersion", "items", "null"]))
values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(_keys, inner, max_size=3)), max_leaves=6)

_OPS = ("replace", "replace", "replace", "quantity", "quantity", "huge", "unicode", "delete", "delete", "duplicate",
        "wrap", "swap", "empty", "nest", "add", "recase")


def paths(o: Any, p: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into ``o`` (keys and list indices), ``()`` first."""
    yield p
    if isinstance(o, dict):
        for k, v in o.items():
            yield from paths(v, (*p, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from paths(v, (*p, i))


_GENTLE_STRINGS = st.one_of(
    st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True), st.sampled_from(_VALID_QUANTITIES),
    st.sampled_from(["", "default", "kube-system", "v1", "Exists", "In", "NotIn", "NoSchedule", "NoExecute",
                     "DoNotSchedule", "ScheduleAnyway", "Never", "Always", "zone-a", "node-a1", "gpu-c1"]))


def _gentle(draw: st.DrawFn, value: Any) -> Any:
    """A value of the same type as ``value``, likely still valid there."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return draw(st.one_of(st.integers(min_value=-3, max_value=10), st.integers(min_value=0, max_value=2**40)))
    if isinstance(value, float):
        return draw(st.floats(min_value=0, max_value=1e6))
    if isinstance(value, str):
        return draw(_GENTLE_STRINGS)
    if isinstance(value, list) and value:
        i = draw(st.integers(min_value=0, max_value=len(value) - 1))
        return value[:i] + value[i + 1:] if draw(st.booleans()) else [*value, copy.deepcopy(value[i])]
    if isinstance(value, dict) and value:
        k = draw(st.sampled_from(list(value)))
        return {kk: v for kk, v in value.items() if kk != k}
    return value


def _mutate_once(draw: st.DrawFn, doc: Any, ops: Sequence[str] = _OPS) -> Any:
    all_paths = list(paths(doc))[1:]
    if not all_paths:
        return draw(values)
    path = draw(st.sampled_from(all_paths))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    value = parent[key]
    op = draw(st.sampled_from(ops))
    if op == "gentle":
        parent[key] = _gentle(draw, value)
    if op == "replace":
        parent[key] = draw(values)
    elif op == "quantity":
        parent[key] = draw(st.one_of(st.sampled_from(ODD_QUANTITIES), st.sampled_from(HUGE_NUMBERS)))
    elif op == "huge":
        parent[key] = draw(st.sampled_from(HUGE_NUMBERS))
    elif op == "unicode":
        parent[key] = draw(st.one_of(st.sampled_from(UNICODE_SAMPLES), _text))
    elif op == "delete":
        del parent[key]
    elif op == "duplicate":  # a list where one value is expected
        parent[key] = [value, copy.deepcopy(value)]
    elif op == "wrap":
        parent[key] = [value]
    elif op == "swap":  # a list where a map is expected, and the other way round
        if isinstance(value, dict):
            parent[key] = list(value.values()) if draw(st.booleans()) else [{k: v} for k, v in value.items()]
        elif isinstance(value, list):
            parent[key] = {str(i): v for i, v in enumerate(value)}
        else:
            parent[key] = {"value": value}
    elif op == "empty":
        parent[key] = draw(st.sampled_from([{}, [], "", None, 0, False]))
    elif op == "nest":
        for _ in range(draw(st.sampled_from([2, 30, 150]))):
            value = [value] if draw(st.booleans()) else {"x": value}
        parent[key] = value
    elif op == "add":
        target = parent if isinstance(parent, dict) else value if isinstance(value, dict) else None
        if target is not None:
            target[draw(st.one_of(_keys, st.none()))] = draw(values)
    elif op == "recase" and isinstance(parent, dict) and isinstance(key, str):
        new = draw(st.sampled_from([key.lower(), key.upper(), key.capitalize(), key.swapcase(), key + " "]))
        parent[new] = parent.pop(key)
    return doc


@st.composite
def mutated(draw: st.DrawFn, bases: Sequence[Any] | Mapping[str, Any], max_mutations: int = 3) -> Any:
    """A copy of a base document (one of ``bases`` when it is a list) with 1 to
    ``max_mutations`` mutations: structural ones (wrong types, deletions, nesting, ...) or,
    one time in three, gentle ones (a value of the same type, an item dropped or repeated),
    which keep many documents valid so that what comes after loading is exercised too."""
    doc = copy.deepcopy(draw(st.sampled_from(list(bases))) if isinstance(bases, Sequence) else bases)
    ops = ("gentle",) if draw(st.integers(0, 2)) == 0 else _OPS
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        doc = _mutate_once(draw, doc, ops)
    return doc


# ---------------------------------------------------------------- rendering to a file
_TEXT_OPS = ("none", "none", "none", "none", "none", "none", "none", "none", "duplicate key", "truncate", "tab", "crlf", "bom",
             "not utf-8", "aliases")
_KEY_LINE = re.compile(r"^( *)(- )?([A-Za-z][\w.\-/]*): (\S.*)$", re.MULTILINE)


def _dump(docs: Sequence[Any], fmt: str) -> str:
    if fmt == "json":
        return "\n".join(json.dumps(d, default=str) for d in docs) if len(docs) > 1 else json.dumps(docs[0], default=str)
    return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False)


def alias_bomb(levels: int, key: str = "x-aliases") -> str:
    """A top-level YAML key whose value is ``levels`` levels of 9 aliases each: 9**levels
    values from a dozen lines ("billion laughs" from 9 levels on)."""
    lines = [f'{key}:', '  l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines)


@st.composite
def file_text(draw: st.DrawFn, docs: Sequence[Any], *, json_share: float = 0.15) -> bytes:
    """``docs`` as the bytes of a file: YAML (or JSON), sometimes damaged at the text level."""
    fmt = "json" if len(docs) == 1 and draw(st.floats(0, 1)) < json_share else "yaml"
    try:
        text = _dump(docs, fmt)
    except (ValueError, OverflowError, RecursionError):  # what the dumper cannot write: YAML then
        text = _dump(docs, "yaml")
    op = draw(st.sampled_from(_TEXT_OPS))
    if op == "duplicate key":
        lines = list(_KEY_LINE.finditer(text))
        if lines:
            m = draw(st.sampled_from(lines))
            indent = m.group(1) + ("  " if m.group(2) else "")
            dup = f"\n{indent}{m.group(3)}: {draw(st.sampled_from(['x', '1', 'null', '[]', '{}', m.group(4)]))}"
            text = text[: m.end()] + dup + text[m.end():]
    elif op == "truncate" and text:
        text = text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    elif op == "tab":
        text = re.sub(r"^  ", "\t", text, count=1, flags=re.MULTILINE)
    elif op == "crlf":
        text = text.replace("\n", "\r\n")
    elif op == "bom":
        text = "\ufeff" + text
    elif op == "aliases":
        kind = re.search(r"^kind: .*$", text, re.MULTILINE)
        if kind:
            text = text[: kind.end()] + "\n" + alias_bomb(draw(st.sampled_from([2, 5, 8]))) + text[kind.end():]
    data = text.encode("utf-8", errors="surrogatepass")
    if op == "not utf-8" and data:
        i = draw(st.integers(min_value=0, max_value=len(data) - 1))
        data = data[:i] + b"\xff" + data[i + 1:]
    return data


# ======================================================================= cases
@dataclass(frozen=True)
class FileCase:
    """A file to write and load; ``procedure`` says how a manifest file that loads is simulated."""

    data: bytes
    procedure: Literal["deterministic", "queue"] = "deterministic"

    def reproducer(self) -> str:
        return self.data.decode("utf-8", errors="backslashreplace")


@dataclass(frozen=True)
class ReplyCase:
    """One extender reply: the verb and nodeCacheCapable setting of the call, the HTTP status,
    the body and its Content-Encoding."""

    verb: str
    node_cache_capable: bool
    status: int
    body: bytes
    encoding: str = ""

    def reproducer(self) -> str:
        return (f"verb={self.verb} nodeCacheCapable={self.node_cache_capable} status={self.status} "
                f"encoding={self.encoding or '-'} body={self.body!r}")


@st.composite
def manifest_cases(draw: st.DrawFn, bases: Bases) -> FileCase:
    """One mutated manifest alone, added to the small cluster, or in its place; sometimes as a
    ``kind: List``."""
    shape = draw(st.sampled_from(["alone", "added", "replaced", "replaced"]))
    if shape == "replaced":
        i = draw(st.integers(min_value=0, max_value=len(bases.cluster) - 1))
        docs = list(bases.cluster)
        docs[i] = draw(mutated(bases.cluster[i], max_mutations=2))
    else:
        doc = draw(mutated(bases.manifests))
        docs = [doc] if shape == "alone" else [*bases.cluster, doc]
    if draw(st.integers(0, 9)) == 0:
        docs = [{"apiVersion": "v1", "kind": "List", "items": docs}]
    data = draw(file_text(docs))
    return FileCase(data, draw(st.sampled_from(["deterministic", "queue"])))


@st.composite
def config_cases(draw: st.DrawFn, bases: Bases) -> FileCase:
    return FileCase(draw(file_text([draw(mutated(bases.configs))])))


@st.composite
def policy_cases(draw: st.DrawFn, bases: Bases) -> FileCase:
    # Policies were usually written as JSON (often tab-indented).
    return FileCase(draw(file_text([draw(mutated(bases.policies))], json_share=0.5)))


# ---------------------------------------------------------------- extender replies
REPLY_NODES: tuple[str, ...] = ("node-1", "node-bad-2", "node-gone-3", "node-4")
VICTIM_UIDS: dict[str, tuple[str, ...]] = {"node-1": ("uid-a", "uid-b"), "node-bad-2": ("uid-c",), "node-4": ("uid-d",)}


def valid_replies() -> dict[str, list[Any]]:
    """Replies a well-behaved extender could give, per verb (the shapes of
    k8s.io/kube-scheduler/extender/v1, as Go writes them or in lower camel case)."""
    return {
        "filter": [
            {"Nodes": {"metadata": {}, "items": [{"metadata": {"name": "node-1"}}, {"metadata": {"name": "node-4"}}]},
             "NodeNames": None, "FailedNodes": {"node-bad-2": "bad"},
             "FailedAndUnresolvableNodes": {"node-gone-3": "gone"}, "Error": ""},
            {"Nodes": None, "NodeNames": ["node-1", "node-4"], "FailedNodes": {"node-bad-2": "bad"},
             "FailedAndUnresolvableNodes": {}, "Error": ""},
            {"nodeNames": ["node-4"], "failedNodes": {"node-1": "busy"}, "error": ""},
        ],
        "prioritize": [[{"Host": "node-1", "Score": 5}, {"Host": "node-4", "Score": 10}],
                       [{"host": "node-bad-2", "score": 0}]],
        "preempt": [
            {"NodeNameToMetaVictims": {"node-1": {"Pods": [{"UID": "uid-a"}], "NumPDBViolations": 1},
                                       "node-4": {"Pods": [{"UID": "uid-d"}], "NumPDBViolations": 0}}},
            {"nodeNameToMetaVictims": {"node-bad-2": {"pods": [{"uid": "uid-c"}], "numPDBViolations": 0}}},
        ],
        "bind": [{"Error": ""}, {"error": ""}],
    }


_VALID = valid_replies()
_JSON_OPS = ("none", "none", "none", "truncate", "trailing", "whitespace", "bom", "not utf-8", "nan", "big number",
             "duplicate key", "deep")


@st.composite
def reply_bodies(draw: st.DrawFn, verb: str) -> bytes:
    """A reply body: a mutated valid reply, random JSON or random bytes, sometimes damaged."""
    kind = draw(st.sampled_from(["mutated", "mutated", "mutated", "valid", "random", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    value = draw(mutated(_VALID[verb])) if kind == "mutated" else draw(values) if kind == "random" \
        else draw(st.sampled_from(_VALID[verb]))
    text = json.dumps(value, default=str)
    op = draw(st.sampled_from(_JSON_OPS))
    if op == "truncate" and text:
        text = text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    elif op == "trailing":
        text += draw(st.sampled_from(["x", " {}", "]", "\n\n", "}", "1"]))
    elif op == "whitespace":
        text = " \t\r\n" + text + "\n"
    elif op == "bom":
        text = "\ufeff" + text
    elif op == "nan":
        text = re.sub(r"\b\d+\b", draw(st.sampled_from(["NaN", "Infinity", "-Infinity"])), text, count=1)
    elif op == "big number":
        text = re.sub(r"\b\d+\b", draw(st.sampled_from(["1e400", "-1e400", "9" * 30, "1.5", "-0", "1E2"])), text,
                      count=1)
    elif op == "duplicate key" and text.startswith("{"):
        key = draw(st.sampled_from(["Error", "error", "NodeNames", "nodenames", "Nodes", "FailedNodes",
                                    "NodeNameToMetaVictims"]))
        text = "{" + json.dumps(key) + ":" + json.dumps(draw(values), default=str) + ("," if text != "{}" else "") \
            + text[1:]
    elif op == "deep":
        n = draw(st.sampled_from([50, 999, 1500, 20000]))
        text = "[" * n + text + "]" * n if draw(st.booleans()) else "[" * n
    data = text.encode("utf-8", errors="surrogatepass")
    if op == "not utf-8" and data:
        i = draw(st.integers(min_value=0, max_value=len(data) - 1))
        data = data[:i] + b"\xff" + data[i + 1:]
    return data


@st.composite
def reply_cases(draw: st.DrawFn) -> ReplyCase:
    verb = draw(st.sampled_from(["filter", "prioritize", "preempt", "bind"]))
    status = draw(st.sampled_from([200] * 12 + [204, 301, 400, 404, 500, 503]))
    body = draw(reply_bodies(verb))
    encoding = draw(st.sampled_from(["", "", "", "", "gzip", "gzip-broken"]))
    if encoding == "gzip":
        body = gzip.compress(body)
    elif encoding == "gzip-broken":
        body, encoding = body + b"\x00", "gzip"
    return ReplyCase(verb, draw(st.booleans()), status, body, encoding)


# ======================================================================= running a case
@dataclass
class Outcome:
    """What one case did: accepted, or rejected with ``message``; ``failure`` says how it
    broke the contract ("" when it kept it), ``detail`` holds the traceback of a crash."""

    accepted: bool
    message: str = ""
    failure: str = ""
    detail: str = ""


# Whole-file or whole-document problems with no field to name (the message says where instead).
_NO_FIELD = re.compile(
    r"(invalid YAML \(line \d+|invalid YAML: |cannot read|nested deeper than|a document must be an object|"
    r"line \d+: duplicate field|duplicate field \"|empty configuration|empty policy|invalid JSON|the document must be a|"
    r"unknown field \"|excessive aliasing)")


def contract_violation(e: BaseException, file: str, *, document: bool) -> str:
    """Why the error ``e`` raised for ``file`` breaks the contract ("" when it does not)."""
    if not isinstance(e, KubeschedError):
        return f"{type(e).__name__} is not a KubeschedError"
    text = str(e)
    if not text.strip():
        return "empty message"
    if "\n" in text or "\r" in text:
        return "the message is not one line"
    if file not in text:
        return "the message does not name the file"
    if document and isinstance(e, ManifestError) and e.document is None and not _NO_FIELD.search(text):
        return "the message does not name the document"
    if document and not isinstance(e, ManifestError):
        return f"{type(e).__name__} where a ManifestError (file, document, field) is expected"
    field_named = (e.field if isinstance(e, ManifestError | ConfigError) else "") or _NO_FIELD.search(text)
    if not field_named and not (isinstance(e, ConfigError) and e.message.startswith("[")):
        return "the message names no field"
    return ""


def build_profiles(config: KubeSchedulerConfiguration) -> None:
    """What ``kubesched simulate`` does with a configuration before scheduling anything: the
    extenders' clients (TLS settings read), ignoredByScheduler resources, every profile's
    framework (plugin args decoded, plugins instantiated). Raises what it raises."""
    Simulator(ClusterObjects(), config, deterministic=True, registry=REGISTRY).close()


def _crash(e: BaseException) -> Outcome:
    return Outcome(False, f"{type(e).__name__}: {e}"[:500], f"crash: {type(e).__name__}",
                   "".join(traceback.format_exception(e)))


def run_file_case(target: Target, case: FileCase, workdir: Path) -> Outcome:
    """Write ``case`` to a file in ``workdir`` and run ``target``'s loader on it."""
    path = workdir / f"fuzz-{target}.yaml"
    path.write_bytes(case.data)
    file = str(path)
    try:
        if target == "manifests":
            objs = load_manifests([path])
        elif target == "config":
            build_profiles(load_config(path))
            return Outcome(True)
        else:
            build_profiles(load_policy(path))
            return Outcome(True)
    except KubeschedError as e:
        return Outcome(False, str(e), contract_violation(e, file, document=target == "manifests"))
    except Exception as e:  # noqa: BLE001 - any other exception is what the fuzzing looks for
        return _crash(e)
    # A file that loads must simulate: nothing it holds may crash the scheduler or break an invariant.
    try:
        sim = Simulator(objs, deterministic=True, check_invariants=True) if case.procedure == "deterministic" \
            else TimelineSimulator(objs, seed=1, check_invariants=True)
        sim.run()
    except Exception as e:  # noqa: BLE001 - even a KubeschedError: the input was accepted
        out = _crash(e)
        out.failure = f"simulation ({case.procedure}) failed: {type(e).__name__}"
        return out
    return Outcome(True)


# ---------------------------------------------------------------- extender replies
def _reply_objects() -> tuple[Pod, list[Node], dict[str, Victims], dict[str, NodeInfo]]:
    pod = parse_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "web-0", "namespace": "default", "uid": "uid-web"},
                     "spec": {"containers": [{"name": "c", "image": "i",
                                              "resources": {"requests": {"cpu": "500m"}}}]}})
    nodes = [parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
                         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
             for n in REPLY_NODES]
    infos: dict[str, NodeInfo] = {}
    victims: dict[str, Victims] = {}
    for node in nodes:
        on_node = [parse_pod({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": f"low-{uid}", "namespace": "default", "uid": uid},
                              "spec": {"nodeName": node.name, "priority": 0,
                                       "containers": [{"name": "c", "image": "i"}]}})
                   for uid in VICTIM_UIDS.get(node.name, ())]
        infos[node.name] = NodeInfo(node, *on_node)
        if on_node:
            victims[node.name] = Victims(tuple(on_node), 0)
    return pod, nodes, victims, infos


class _Lister:
    def __init__(self, infos: Mapping[str, NodeInfo]) -> None:
        self._infos = infos

    def get(self, name: str) -> NodeInfo | None:
        return self._infos.get(name)


def run_reply_case(case: ReplyCase) -> Outcome:
    """Give ``case`` as the reply of an extender called for ``case.verb`` (through an
    in-memory transport) and run the scheduler's side of that verb on it."""
    headers = {"Content-Type": "application/json"}
    if case.encoding:
        headers["Content-Encoding"] = case.encoding

    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(case.status, headers=headers, content=case.body)

    cfg = ExtenderConfig(url_prefix="http://extender.fuzz/scheduler", filter_verb="filter",
                         prioritize_verb="prioritize", preempt_verb="preempt", bind_verb="bind", weight=3,
                         node_cache_capable=case.node_cache_capable, http_timeout=5.0)
    pod, nodes, victims, infos = _reply_objects()
    try:
        with HTTPExtender(cfg, transport=httpx.MockTransport(reply)) as ext:
            if case.verb == "filter":
                statuses: dict[str, Status] = {}
                kept = run_filter_extenders([ext], pod, nodes, statuses)
                if not {n.name for n in kept} <= set(REPLY_NODES):
                    return Outcome(True, failure="filter kept a node it was not given")
            elif case.verb == "prioritize":
                ext.prioritize(pod, nodes)  # raises what the scheduler's side swallows
                run_prioritize_extenders([ext], pod, nodes).totals([n.name for n in nodes])
            elif case.verb == "preempt":
                chosen = run_preemption_extenders([ext], pod, victims, _Lister(infos))
                if not set(chosen) <= set(victims):
                    return Outcome(True, failure="preemption chose a node that was not a candidate")
            else:
                _, err = run_bind_extenders([ext], pod, "node-1")
                if err is not None:
                    raise err
    except KubeschedError as e:
        text = str(e)
        failure = "" if text.strip() and "\n" not in text and "\r" not in text else "the message is not one line"
        return Outcome(False, text, failure)
    except Exception as e:  # noqa: BLE001 - any other exception is what the fuzzing looks for
        return _crash(e)
    return Outcome(True)


# ======================================================================= a whole run
@dataclass
class TargetStats:
    """What a run of one target did."""

    target: str
    cases: int = 0
    accepted: int = 0
    rejected: int = 0
    crashes: int = 0
    bad_messages: int = 0
    seconds: float = 0.0
    messages: dict[str, str] = field(default_factory=dict)  # message shape -> one example
    failures: list[tuple[Outcome, str]] = field(default_factory=list)  # (outcome, reproducer)

    @property
    def failed(self) -> int:
        return self.crashes + self.bad_messages

    def record(self, out: Outcome, reproducer: Callable[[], str], keep_failures: int = 20) -> None:
        self.cases += 1
        if out.accepted and not out.failure:
            self.accepted += 1
        else:
            self.rejected += not out.accepted
            if out.message:
                self.messages.setdefault(message_shape(out.message), out.message)
        if out.failure:
            if out.detail:
                self.crashes += 1
            else:
                self.bad_messages += 1
            if len(self.failures) < keep_failures:
                self.failures.append((out, reproducer()))


_SHAPE = re.compile(r"(document \d+|\[\d+\]|\d+|\"[^\"]*\"|'[^']*')")


def message_shape(message: str) -> str:
    """A message with its file, numbers and quoted values blanked: one sample per kind of error."""
    tail = message.split(": ", 1)[1] if message.startswith("/") and ": " in message else message
    return _SHAPE.sub("#", tail)[:90]


def case_strategy(target: Target, bases: Bases) -> st.SearchStrategy[Any]:
    if target == "manifests":
        return manifest_cases(bases)
    if target == "config":
        return config_cases(bases)
    if target == "policy":
        return policy_cases(bases)
    return reply_cases()


def run_case(target: Target, case: Any, workdir: Path) -> Outcome:
    if target == "extender":
        assert isinstance(case, ReplyCase)
        return run_reply_case(case)
    assert isinstance(case, FileCase)
    return run_file_case(target, case, workdir)


def now() -> float:
    return time.perf_counter()
