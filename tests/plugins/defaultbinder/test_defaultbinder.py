"""DefaultBinder (upstream default_binder_test.go TestDefaultBinder)."""

from __future__ import annotations

import pytest
from builders import make_pod

from kubesched._cache import Cache
from kubesched._runtime.handle import FrameworkHandle
from kubesched.errors import ApiError
from kubesched.framework import BindPlugin, Code, CycleState
from kubesched.objects import Pod
from kubesched.plugins import defaultbinder
from kubesched.plugins.defaultbinder import NAME

TEST_NODE = "foohost.kubernetes.mydomain.com"


@pytest.mark.parametrize(
    "inject_err",
    [None, ApiError("binding error"), ApiError('pods "foo" not found', status=404)],
    ids=["successful binding calls the API once with the pod and node",
         "a binding error becomes an Error status",
         "a not-found API error becomes an Error status with its message"],
)
def test_bind(inject_err: ApiError | None) -> None:
    calls: list[tuple[str, str]] = []

    def binder(pod: Pod, node_name: str) -> None:
        calls.append((pod.key, node_name))
        if inject_err is not None:
            raise inject_err

    handle = FrameworkHandle(Cache(), binder=binder)
    pl = defaultbinder.new(None, handle)
    pod = make_pod().name("foo").namespace("ns").obj()
    status = pl.bind(CycleState(), pod, TEST_NODE)
    assert calls == [("ns/foo", TEST_NODE)]
    if inject_err is None:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.ERROR
        assert status.message == str(inject_err)
        assert status.error is inject_err


def test_unexpected_exceptions_are_not_swallowed() -> None:
    def binder(pod: Pod, node_name: str) -> None:
        raise RuntimeError("bug")

    pl = defaultbinder.new(None, FrameworkHandle(Cache(), binder=binder))
    with pytest.raises(RuntimeError, match="bug"):
        pl.bind(CycleState(), make_pod().obj(), "n")


def test_plugin_shape() -> None:
    pl = defaultbinder.new(None, FrameworkHandle(Cache()))
    assert pl.name == NAME == "DefaultBinder"
    assert isinstance(pl, BindPlugin)
    assert pl.events_to_register() == []
