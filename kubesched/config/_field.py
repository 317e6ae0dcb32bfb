"""field.Error wording (k8s.io/apimachinery/pkg/util/validation/field) and name checks
(k8s.io/apimachinery/pkg/util/validation: IsQualifiedName, IsDNS1123Subdomain).

Every helper returns a :class:`FieldError` whose message is upstream's ``ErrorBody()``, so
``str(err)`` reads like the Go error: ``path: Invalid value: 3: detail``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from kubesched.errors import FieldError


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def quote(s: str) -> str:
    """Go's %q (close enough for the strings a config holds)."""
    return json.dumps(s, ensure_ascii=False)


class GoLiteral(str):
    """A bad value already formatted the way Go prints it (a Duration's ``15s``, a type name)."""


def go_value(value: Any) -> str:
    """How field.Error.ErrorBody prints a bad value: simple types with %v, strings with %q."""
    if isinstance(value, GoLiteral):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return quote(value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def invalid(path: str, value: Any, detail: str = "") -> FieldError:
    body = f"Invalid value: {go_value(value)}"
    return FieldError(path, f"{body}: {detail}" if detail else body)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, f"Required value: {detail}" if detail else "Required value")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> FieldError:
    values = ", ".join(quote(s) for s in supported)
    body = f"Unsupported value: {go_value(value)}"
    return FieldError(path, f"{body}: supported values: {values}" if values else body)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, f"Duplicate value: {go_value(value)}")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}" if detail else "Forbidden")


# ---------------------------------------------------------------- names
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError (note upstream's double space before "or")."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """validation.IsQualifiedName: ``[prefix/]name`` (label keys, resource names)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def validate_label_name(value: str, path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelName."""
    return [invalid(path, value, msg) for msg in is_qualified_name(value)]
