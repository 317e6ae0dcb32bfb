"""Plugins written by users as plain classes, and their typed args: a factory whose ``args``
parameter is annotated with a dataclass gets the raw pluginConfig mapping decoded into it
(camelCase -> snake_case, strict, typed), with ConfigErrors naming
``profiles[i].pluginConfig[j].args.<field>``."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from simkit import cluster, config, enable, node, pod, registry

from kubesched._runtime.args import camel_case, decode_args, snake_case
from kubesched._runtime.handle import FrameworkHandle
from kubesched._runtime.profile import build_framework
from kubesched.errors import ConfigError, FieldError, PluginError
from kubesched.framework import CycleState, Handle, NodeInfo, Status
from kubesched.objects import Pod
from kubesched.simulation import Simulator


class Mode(enum.Enum):
    FAST = "Fast"
    SAFE = "Safe"


@dataclass(frozen=True)
class Window:
    start: int = 0
    end: int = 10


@dataclass(frozen=True)
class Args:
    timeout_seconds: int = 30
    ratio: float = 0.5
    label: str = "tier"
    strict: bool = False
    prefer: Literal["Higher", "Lower"] = "Higher"
    mode: Mode = Mode.FAST
    zones: list[str] = field(default_factory=list)
    weights: dict[str, int] = field(default_factory=dict)
    pair: tuple[int, int] = (1, 2)
    window: Window = Window()
    limit: int | None = None
    pod_ips: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.timeout_seconds < 0:
            raise FieldError("timeoutSeconds", f"Invalid value: {self.timeout_seconds}: must not be negative")
        if self.window.start > self.window.end:
            raise ValueError("window.start must not be after window.end")


@dataclass(frozen=True)
class Required:
    label: str


class Recorder:
    """A user plugin: a plain class with a name and a Filter method, keeping its args."""

    name = "Recorder"

    def __init__(self, args: Any) -> None:
        self.args = args

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


def typed(args: Args, handle: Handle) -> Recorder:
    return Recorder(args)


def typed_optional(args: Args | None, handle: Handle) -> Recorder:
    return Recorder(args)


def required(args: Required, handle: Handle) -> Recorder:
    return Recorder(args)


def untyped(args: Any, handle: Handle) -> Recorder:
    return Recorder(args)


class ClassFactory(Recorder):
    """The class itself as the factory: its __init__ annotation is used."""

    def __init__(self, args: Args, handle: Handle) -> None:
        super().__init__(args)


def build(factory: Any, args: Any = None, *, second_profile: bool = False) -> Any:
    """Build a profile enabling Recorder at Filter with ``args`` as its pluginConfig (the
    second of two pluginConfig entries, in the second profile if asked); return its args."""
    profile: dict[str, Any] = {"schedulerName": "custom", "plugins": enable(filter=["Recorder"])}
    if args is not None:
        profile["pluginConfig"] = [{"name": "NodeResourcesFit", "args": {}}, {"name": "Recorder", "args": args}]
    profiles = [{"schedulerName": "default-scheduler"}, profile] if second_profile else [profile]
    cfg = config(*profiles)
    index = len(profiles) - 1
    fwk = build_framework(cfg.profiles[index], registry(Recorder=factory), FrameworkHandle.for_nodes([]), index=index)
    return next(p for p in fwk.filter if p.name == "Recorder").args


def test_raw_camel_case_args_become_the_typed_dataclass() -> None:
    got = build(typed, {"timeoutSeconds": 60, "ratio": 2, "label": "zone", "strict": True, "prefer": "Lower",
                        "mode": "Safe", "zones": ["a", "b"], "weights": {"a": 1}, "pair": [3, 4],
                        "window": {"start": 1, "end": 2}, "limit": None, "podIPs": ["10.0.0.1"]})
    assert got == Args(timeout_seconds=60, ratio=2.0, label="zone", strict=True, prefer="Lower", mode=Mode.SAFE,
                       zones=["a", "b"], weights={"a": 1}, pair=(3, 4), window=Window(1, 2), limit=None,
                       pod_ips=("10.0.0.1",))
    assert isinstance(got.ratio, float)


@pytest.mark.parametrize(
    ("factory", "expected"),
    [(typed, Args()), (typed_optional, None), (untyped, None), (ClassFactory, Args())],
    ids=["no args configured means the dataclass defaults", "an optional annotation keeps None",
         "an unannotated factory gets the args as written", "a class used as its own factory is typed too"],
)
def test_plugins_without_plugin_config(factory: Any, expected: Any) -> None:
    assert build(factory) == expected


def test_an_unannotated_factory_gets_the_raw_mapping() -> None:
    assert build(untyped, {"anyThing": [1, 2]}) == {"anyThing": [1, 2]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"timeoutSecond": 1}, 'profiles[1].pluginConfig[1].args.timeoutSecond: unknown field "timeoutSecond"'),
        ({"timeoutSeconds": "30s"},
         "profiles[1].pluginConfig[1].args.timeoutSeconds: Invalid value: '30s': expected integer, got string"),
        ({"timeoutSeconds": True},
         "profiles[1].pluginConfig[1].args.timeoutSeconds: Invalid value: True: expected integer, got boolean"),
        ({"ratio": "x"}, "profiles[1].pluginConfig[1].args.ratio: Invalid value: 'x': expected number, got string"),
        ({"prefer": "Middle"},
         "profiles[1].pluginConfig[1].args.prefer: Unsupported value: 'Middle': supported values: \"Higher\", \"Lower\""),
        ({"mode": "Slow"}, "profiles[1].pluginConfig[1].args.mode: Unsupported value: 'Slow': supported values: "
                           "'Fast', 'Safe'"),
        ({"zones": ["a", 1]}, "profiles[1].pluginConfig[1].args.zones[1]: Invalid value: 1: expected string, got integer"),
        ({"zones": "a"}, "profiles[1].pluginConfig[1].args.zones: Invalid value: 'a': expected an array, got string"),
        ({"weights": {"a": "heavy"}},
         "profiles[1].pluginConfig[1].args.weights[a]: Invalid value: 'heavy': expected integer, got string"),
        ({"pair": [1]}, "profiles[1].pluginConfig[1].args.pair: Invalid value: [1]: expected 2 items, got 1"),
        ({"window": {"begin": 1}}, 'profiles[1].pluginConfig[1].args.window.begin: unknown field "begin"'),
        ({"limit": "none"}, "profiles[1].pluginConfig[1].args.limit: Invalid value: 'none': expected integer, got string"),
        ({"timeoutSeconds": 1, "timeout_seconds": 2},
         'profiles[1].pluginConfig[1].args.timeout_seconds: duplicate field: "timeoutSeconds" is the same field'),
        ({"timeoutSeconds": -1},
         "profiles[1].pluginConfig[1].args.timeoutSeconds: Invalid value: -1: must not be negative"),
        ({"window": {"start": 5, "end": 1}},
         "profiles[1].pluginConfig[1].args: Invalid value: window.start must not be after window.end"),
        (["timeoutSeconds"], "profiles[1].pluginConfig[1].args: Invalid value: ['timeoutSeconds']: expected an object, "
                             "got array"),
    ],
    ids=["an unknown field is rejected", "a string where an integer is expected", "a boolean is not an integer",
         "a string where a number is expected", "a value outside a Literal", "a value outside an Enum",
         "a list item of the wrong type", "a scalar where a list is expected", "a map value of the wrong type",
         "a fixed-size tuple of the wrong length", "an unknown field of a nested dataclass",
         "a wrong type in an optional field", "the same field twice in two spellings",
         "a FieldError from __post_init__ names its field", "a ValueError from __post_init__ is located at args",
         "args that are not a mapping"],
)
def test_invalid_args_are_config_errors_naming_the_field(args: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        build(typed, args, second_profile=True)
    assert str(err.value) == message


def test_a_required_field_without_any_plugin_config_is_reported() -> None:
    with pytest.raises(ConfigError) as err:
        build(required)
    assert str(err.value) == "profiles[0].pluginConfig: plugin Recorder needs args (args.label: Required value)"
    with pytest.raises(ConfigError, match=r"profiles\[0\]\.pluginConfig\[1\]\.args\.label: Required value"):
        build(required, {})
    assert build(required, {"label": "x"}) == Required("x")


def test_the_cli_reports_a_bad_arg_of_an_out_of_tree_plugin_with_its_path(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from kubesched.cli import main

    cfg = tmp_path / "config.yaml"
    cfg.write_text("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    permit: {enabled: [{name: Coscheduling}]}
    reserve: {enabled: [{name: Coscheduling}]}
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 0}
""")
    r = CliRunner().invoke(main, ["simulate", "examples/plugins/gang-cluster-fits", "--config", str(cfg),
                                  "--plugin", "examples/plugins/coscheduling.py:new"])
    assert r.exit_code == 2
    assert r.output.strip() == (f"error: {cfg}: profiles[0].pluginConfig[0].args.permitWaitingTimeSeconds: Invalid "
                                "value: 0: must be greater than 0")


@pytest.mark.parametrize(
    ("key", "name"),
    [("minMember", "min_member"), ("permitWaitingTimeSeconds", "permit_waiting_time_seconds"), ("podIPs", "pod_ips"),
     ("clusterCIDRs", "cluster_cidrs"), ("HTTPTimeout", "http_timeout"), ("already_snake", "already_snake"),
     ("label", "label")],
)
def test_camel_case_keys_map_to_snake_case_fields(key: str, name: str) -> None:
    assert snake_case(key) == name


def test_missing_fields_are_named_in_camel_case() -> None:
    assert camel_case("permit_waiting_time_seconds") == "permitWaitingTimeSeconds"
    assert camel_case("label") == "label"


def test_decode_args_passes_an_instance_through() -> None:
    a = Args(timeout_seconds=5)
    assert decode_args(a, Args) is a


# ----------------------------------------------------------------------------- plain classes
class Scorer:
    """A plain class, no base class: a name and a Score method."""

    name = "Scorer"

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return 100 if node_info.name == "n2" else 0


def test_a_plain_class_with_a_name_and_a_score_method_schedules() -> None:
    cfg = config({"plugins": {"score": {"enabled": [{"name": "Scorer", "weight": 50}]}}})
    sim = Simulator(cluster([node("n1"), node("n2"), node("n3")], [pod("p")]), cfg,
                    registry=registry(Scorer=lambda args, handle: Scorer()), deterministic=True)
    attempt = sim.scheduler.schedule_one(sim.objs.pods[0])
    assert attempt.node == "n2"
    assert attempt.scores is not None and attempt.scores.as_dict()["n2"]["Scorer"] == 5000


@pytest.mark.parametrize(
    ("point", "message"),
    [("filter", "profiles[0].plugins.filter: plugin 'Scorer' does not extend Filter plugin"),
     ("permit", "profiles[0].plugins.permit: plugin 'Scorer' does not extend Permit plugin")],
    ids=["a score-only plugin enabled at Filter is rejected", "a score-only plugin enabled at Permit is rejected"],
)
def test_a_plugin_enabled_at_a_point_it_does_not_implement_is_rejected(point: str, message: str) -> None:
    cfg = config({"plugins": enable(**{point: ["Scorer"]})})
    with pytest.raises(ConfigError) as err:
        build_framework(cfg.profiles[0], registry(Scorer=lambda args, handle: Scorer()),
                        FrameworkHandle.for_nodes([]), index=0)
    assert str(err.value) == message


class Nameless:
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


class Misnamed(Nameless):
    name = "Other"


class HalfReserve:
    name = "Half"

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None


@pytest.mark.parametrize(
    ("plugin", "point", "message"),
    [(Nameless(), "filter", "plugin 'Half': the object its factory returned has no name"),
     (Misnamed(), "filter", "plugin registered as 'Half' calls itself 'Other'"),
     (HalfReserve(), "reserve", "plugin 'Half' implements reserve but not unreserve")],
    ids=["a plugin without a name", "a plugin whose name is not its registered name",
         "a Reserve plugin without unreserve"],
)
def test_plugins_the_framework_could_not_run_are_rejected_at_construction(plugin: Any, point: str,
                                                                          message: str) -> None:
    cfg = config({"plugins": enable(**{point: ["Half"]})})
    with pytest.raises(PluginError, match=message):
        build_framework(cfg.profiles[0], registry(Half=lambda args, handle: plugin), FrameworkHandle.for_nodes([]))


def test_an_args_annotation_that_cannot_be_resolved_is_reported() -> None:
    @dataclass(frozen=True)
    class LocalArgs:
        x: int = 1

    def new(args: LocalArgs, handle: Handle) -> Recorder:
        return Recorder(args)

    with pytest.raises(PluginError, match="cannot resolve the annotation 'LocalArgs' of its args parameter "
                                          r"\(NameError: name 'LocalArgs' is not defined\); define the args type at "
                                          "module level"):
        build(new)


def test_only_the_args_annotation_is_evaluated() -> None:
    class LocalPlugin(Recorder):
        pass

    def new(args: Args, handle: Handle) -> LocalPlugin:  # the return annotation cannot be resolved: no matter
        return LocalPlugin(args)

    assert build(new, {"label": "x"}) == Args(label="x")


class OnlyPreFilter:
    """PreFilter without pre_filter_extensions (optional for a plugin written by a user)."""

    name = "OnlyPreFilter"

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[None, Status | None]:
        return None, Status.unresolvable("not today") if pod.name == "blocked" else None


def test_a_pre_filter_plugin_without_pre_filter_extensions_works() -> None:
    cfg = config({"plugins": enable(preFilter=["OnlyPreFilter"])})
    sim = Simulator(cluster([node("n1")], [pod("ok"), pod("blocked", arrives=1)]), cfg,
                    registry=registry(OnlyPreFilter=lambda args, handle: OnlyPreFilter()), deterministic=True)
    res = sim.run()
    assert res.final == {"default/ok": "n1", "default/blocked": None}
    message = res.steps[1].attempt.message
    assert message is not None and message.startswith("0/1 nodes are available: not today. no new claims to deallocate, preemption:")
