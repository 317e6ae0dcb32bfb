"""Typed args for plugins written by users.

A plugin factory ``new(args, handle)`` whose first parameter is annotated with a dataclass
(``args: MyArgs`` or ``args: MyArgs | None``) gets an instance of it: the raw ``pluginConfig``
mapping (args of an out-of-tree plugin are kept as written, like upstream's runtime.Unknown)
is decoded strictly — camelCase keys to snake_case fields, unknown keys rejected, values
checked against the field types — the way upstream decodes an in-tree ``<Plugin>Args`` kind.
Errors are :class:`~kubesched.errors.FieldError` located below the args (``args.minMember``);
:func:`kubesched._runtime.profile.build_framework` prefixes ``profiles[i].pluginConfig[j]``.

Supported field types: bool, int, float (an int is accepted), str, Any/object, ``X | None``,
unions, ``Literal[...]``, Enum subclasses (by value), ``list[T]`` / ``tuple[T, ...]`` /
``Sequence[T]`` / ``set[T]`` / ``frozenset[T]``, ``dict[str, T]`` / ``Mapping[str, T]`` and
nested dataclasses. A dataclass's ``__post_init__`` validates across fields: a ValueError or
TypeError it raises is reported at the args; a FieldError names its own field below them.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.errors import FieldError, PluginError

_NONE = type(None)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PLURAL_ACRONYM = re.compile(r"([A-Z])([A-Z]+)s(?=[A-Z_]|$)")  # IPs, CIDRs: one word


def snake_case(key: str) -> str:
    """``minMember`` -> ``min_member``, ``podIPs`` -> ``pod_ips``, ``HTTPTimeout`` -> ``http_timeout``;
    snake_case stays as it is."""
    key = _PLURAL_ACRONYM.sub(lambda m: m[1] + m[2].lower() + "s", key)
    return _CAMEL_BOUNDARY.sub("_", key).lower()


def camel_case(name: str) -> str:
    """``min_member`` -> ``minMember`` (how a missing field is named in errors)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def args_type_of(factory: Any) -> tuple[type[Any] | None, bool]:
    """The dataclass the factory's first parameter is annotated with (None if it is not one)
    and whether the annotation also accepts None. Works for functions and for classes used
    as factories (their ``__init__``). Only that annotation is evaluated (a string one in the
    factory's module globals); PluginError if it cannot be."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None, False
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params or params[0].annotation is inspect.Parameter.empty:
        return None, False
    ann = params[0].annotation
    if isinstance(ann, str):
        ann = _evaluate(ann, factory)
    if _is_dataclass_type(ann):
        return ann, False
    if _is_union(ann):
        members = typing.get_args(ann)
        classes = [m for m in members if m is not _NONE]
        if len(classes) == 1 and _is_dataclass_type(classes[0]):
            return classes[0], _NONE in members
    return None, False


def _evaluate(annotation: str, factory: Any) -> Any:
    target = inspect.unwrap(vars(factory).get("__init__", factory) if isinstance(factory, type) else factory)
    namespace = getattr(target, "__globals__", None)
    if namespace is None:
        module = sys.modules.get(getattr(factory, "__module__", "") or "")
        namespace = vars(module) if module is not None else {}
    try:
        return eval(annotation, dict(namespace))  # noqa: S307 - an annotation the plugin's author wrote
    except Exception as e:  # noqa: BLE001 - reported with the plugin's name by the caller's context
        name = getattr(factory, "__qualname__", repr(factory))
        raise PluginError(f"factory {name}: cannot resolve the annotation {annotation!r} of its args parameter "
                          f"({type(e).__name__}: {e}); define the args type at module level") from None


def decode_args(raw: Any, cls: type[Any], *, optional: bool = False, path: str = "args") -> Any:
    """``raw`` (a pluginConfig ``args`` value) as an instance of the dataclass ``cls``. None
    stays None when ``optional``; otherwise it means "no args": every field's default."""
    if isinstance(raw, cls):
        return raw
    if raw is None:
        if optional:
            return None
        raw = {}
    return _decode_dataclass(raw, cls, path)


def _is_dataclass_type(t: Any) -> bool:
    return isinstance(t, type) and dataclasses.is_dataclass(t)


def _is_union(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if value is None:
        return "null"
    return type(value).__name__


def _type_name(t: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if t in names:
        return names[t]
    if _is_dataclass_type(t):
        return "object"
    return getattr(t, "__name__", None) or str(t).replace("typing.", "")


def _invalid(path: str, value: Any, expected: str) -> FieldError:
    return FieldError(path, f"Invalid value: {value!r}: expected {expected}, got {_describe(value)}")


def _decode_dataclass(raw: Any, cls: type[Any], path: str) -> Any:
    if not isinstance(raw, Mapping):
        raise _invalid(path, raw, "an object")
    try:
        hints = typing.get_type_hints(cls)
    except Exception as e:  # noqa: BLE001 - an annotation of the user's that cannot be resolved
        raise FieldError(path, f"cannot resolve the field types of {cls.__name__}: {e}") from None
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    values: dict[str, Any] = {}
    written: dict[str, str] = {}  # field -> key as written
    for key, value in raw.items():
        if not isinstance(key, str):
            raise FieldError(path, f"Invalid value: {key!r}: field names are strings")
        name = snake_case(key)
        if name not in fields:
            quoted = json.dumps(key, ensure_ascii=False)  # one line, whatever the key holds
            raise FieldError(f"{path}.{quoted[1:-1]}", f"unknown field {quoted}")
        if name in written:
            raise FieldError(f"{path}.{key}", f'duplicate field: "{written[name]}" is the same field')
        written[name] = key
        values[name] = _decode(value, hints.get(name, Any), f"{path}.{key}")
    for name, f in fields.items():
        if name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FieldError(f"{path}.{camel_case(name)}", "Required value")
    try:
        return cls(**values)
    except FieldError as e:
        raise e.under(path) from None
    except (ValueError, TypeError) as e:
        raise FieldError(path, f"Invalid value: {e}") from None


def _decode(value: Any, t: Any, path: str) -> Any:
    if t is Any or t is object:
        return value
    if _is_union(t):
        members = typing.get_args(t)
        if value is None:
            if _NONE in members:
                return None
            raise _invalid(path, value, " or ".join(_type_name(m) for m in members))
        errors: list[FieldError] = []
        for m in members:
            if m is _NONE:
                continue
            try:
                return _decode(value, m, path)
            except FieldError as e:
                errors.append(e)
        if len(errors) == 1:
            raise errors[0]
        raise _invalid(path, value, " or ".join(_type_name(m) for m in members if m is not _NONE))
    if t is _NONE:
        if value is None:
            return None
        raise _invalid(path, value, "null")
    origin = typing.get_origin(t)
    if origin is typing.Literal:
        allowed = typing.get_args(t)
        if value in allowed and not (isinstance(value, bool) and not any(isinstance(a, bool) for a in allowed)):
            return value
        supported = ", ".join(f'"{a}"' if isinstance(a, str) else repr(a) for a in allowed)
        raise FieldError(path, f"Unsupported value: {value!r}: supported values: {supported}")
    if t is bool:
        if isinstance(value, bool):
            return value
        raise _invalid(path, value, "boolean")
    if t is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _invalid(path, value, "integer")
    if t is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _invalid(path, value, "number")
    if t is str:
        if isinstance(value, str):
            return value
        raise _invalid(path, value, "string")
    if isinstance(t, type) and issubclass(t, enum.Enum):
        try:
            return t(value)
        except ValueError:
            supported = ", ".join(repr(m.value) for m in t)
            raise FieldError(path, f"Unsupported value: {value!r}: supported values: {supported}") from None
    if _is_dataclass_type(t):
        return _decode_dataclass(value, t, path)
    if origin in (list, tuple, set, frozenset, Sequence) or t in (list, tuple, set, frozenset):
        return _decode_sequence(value, t, origin or t, path)
    if origin in (dict, Mapping) or t in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise _invalid(path, value, "an object")
        args = typing.get_args(t)
        kt, vt = args if len(args) == 2 else (Any, Any)
        return {_decode(k, kt, f"{path}[{k}]"): _decode(v, vt, f"{path}[{k}]") for k, v in value.items()}
    if isinstance(t, type):
        if isinstance(value, t):
            return value
        raise _invalid(path, value, _type_name(t))
    return value  # a type kubesched cannot check (a TypeVar, a Protocol ...): as written


def _decode_sequence(value: Any, t: Any, origin: Any, path: str) -> Any:
    if not isinstance(value, list | tuple):
        raise _invalid(path, value, "an array")
    args = typing.get_args(t)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise FieldError(path, f"Invalid value: {value!r}: expected {len(args)} items, got {len(value)}")
        return tuple(_decode(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True)))
    item = args[0] if args else Any
    items = [_decode(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        return tuple(items)
    if origin is set:
        return set(items)
    if origin is frozenset:
        return frozenset(items)
    return items
