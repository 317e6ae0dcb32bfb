"""Name formats of API validation (apimachinery's validate/content: IsDNS1123Label,
IsDNS1123Subdomain) and field.Invalid's rendering, shared by the parsers."""

from __future__ import annotations

import re

from kubesched.errors import FieldError

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """content.RegexError."""
    listed = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def shown(value: object) -> str:
    """field.Invalid's rendering of the value: strings quoted, numbers bare, nil as null."""
    if value is None:
        return "null"
    return f'"{value}"' if isinstance(value, str) else str(value)


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {shown(value)}: {detail}")


def dns1123_subdomain_errors(value: str) -> list[str]:
    """content.IsDNS1123Subdomain (the "long name" format)."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 bytes")
    if _DNS1123_SUBDOMAIN.match(value) is None:
        errs.append(_regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                 "characters, '-' or '.', and must start and end with an alphanumeric character",
                                 _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    """content.IsDNS1123Label (the "short name" format)."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if _DNS1123_LABEL.match(value) is None:
        if _DNS1123_SUBDOMAIN.match(value) is not None:
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                     "or '-', and must start and end with an alphanumeric character",
                                     _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs
