"""The one exception tree of kubesched.

Expected scheduling outcomes (a node does not fit, a pod is unschedulable) are never
exceptions: plugins return a :class:`kubesched.framework.Status`. Exceptions are for bad
input, bugs and I/O failures, and all of them derive from :class:`KubeschedError`::

    KubeschedError
    ├── ManifestError        a manifest cannot be read: names file, document index, field
    ├── ConfigError          a KubeSchedulerConfiguration / Policy / plugin args is invalid
    │                        (names file and field path, e.g. profiles[0].pluginConfig[1].args...)
    ├── PluginError          a plugin misbehaved (bad registration, invalid score, crash)
    ├── ApiError             talking to an API server or an extender failed
    ├── InvariantViolation   a scheduler invariant broke (debug switch KUBESCHED_CHECK_INVARIANTS):
    │                        names the invariant, the pod, the node and the scheduling cycle
    └── FieldError           a field-level validation failure; parsers raise it and the caller
                             re-raises it as ManifestError or ConfigError with the location

The CLI turns any KubeschedError into one line on stderr and exit code 2.
"""

from __future__ import annotations


class KubeschedError(Exception):
    """Base of every error kubesched raises on purpose."""


class FieldError(KubeschedError):
    """A value at ``path`` (dotted, with [i] indices) is invalid."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message

    def under(self, prefix: str) -> FieldError:
        """The same error, located below ``prefix``."""
        if not prefix:
            return self
        path = f"{prefix}.{self.path}" if self.path and not self.path.startswith("[") else f"{prefix}{self.path}"
        return FieldError(path, self.message)


def _one_line(text: str) -> str:
    """Errors are printed as one line: control characters from the input are escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def utf8_error(data: bytes, e: UnicodeDecodeError) -> str:
    """Where ``data`` stops being UTF-8, in one line: the byte, its line and column (the
    codec's own text gives a byte offset only)."""
    before = data[: e.start]
    line = before.count(b"\n") + 1
    column = len(before) - (before.rfind(b"\n") + 1) + 1
    return f"not UTF-8: byte 0x{data[e.start]:02x} at line {line}, column {column}"


class ManifestError(KubeschedError):
    """A manifest cannot be used; the message names the file, document and field."""

    def __init__(self, file: str, document: int | None, field: str, message: str) -> None:
        field, message = _one_line(field), _one_line(message)
        where = file
        if document is not None:
            where += f": document {document}"
        if field:
            where += f": {field}"
        super().__init__(f"{where}: {message}")
        self.file = file
        self.document = document
        self.field = field
        self.message = message


class ConfigError(KubeschedError):
    """A scheduler configuration (or legacy Policy, or plugin args) is invalid."""

    def __init__(self, message: str, *, file: str | None = None, field: str = "") -> None:
        message, field = _one_line(message), _one_line(field)
        text = message
        if field:
            text = f"{field}: {text}"
        if file:
            text = f"{file}: {text}"
        super().__init__(text)
        self.file = file
        self.field = field
        self.message = message


class PluginError(KubeschedError):
    """A plugin is misconfigured or misbehaved (duplicate name, invalid score, ...)."""


class ApiError(KubeschedError):
    """An API server or extender call failed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        # One line, like every error kubesched prints: the text may come from the other side
        # (an extender's reply ``Error``, an API server's message) and hold newlines (found by
        # fuzzing extender replies: scripts/fuzz.py).
        super().__init__(_one_line(message))
        self.status = status


class InvariantViolation(KubeschedError):
    """A scheduler invariant does not hold after a scheduling or binding cycle (a bug in
    kubesched or in a plugin, never bad input): raised by the invariant checker
    (kubesched._runtime.invariants) when the debug switch is on. ``cycle`` is the scheduling
    cycle (for a binding cycle: the one that scheduled the pod), ``phase`` "scheduling",
    "binding" or "end" (the check at the end of a run)."""

    def __init__(self, invariant: str, detail: str, *, cycle: int, phase: str, pod: str = "",
                 node: str = "") -> None:
        where = f"after the {phase} cycle {cycle}" if phase in ("scheduling", "binding") else f"at {phase} (cycle {cycle})"
        subject = ", ".join(part for part in (f"pod {pod}" if pod else "", f"node {node}" if node else "") if part)
        super().__init__(_one_line(f"invariant {invariant!r} violated {where}"
                                   f"{': ' + subject if subject else ''}: {detail}"))
        self.invariant = invariant
        self.detail = detail
        self.cycle = cycle
        self.phase = phase
        self.pod = pod
        self.node = node
