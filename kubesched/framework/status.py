"""Status and Code: how plugins report expected outcomes (framework/interface.go)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Code(IntEnum):
    """Status codes, in upstream's iota order (their names are metric label values)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """The upstream name: Success, Error, Unschedulable, ..."""
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


@dataclass(frozen=True, slots=True)
class Status:
    """The result of running a plugin. ``None`` stands for success wherever a plugin may
    return a Status, exactly like a nil *Status upstream.

    ``reasons`` are the user-facing reason strings (each counts separately in the
    FailedScheduling histogram); ``plugin`` is the plugin that failed, set by the framework.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: BaseException | None = None

    @staticmethod
    def unschedulable(*reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE, reasons)

    @staticmethod
    def unresolvable(*reasons: str) -> Status:
        """UnschedulableAndUnresolvable: preemption cannot help on that node."""
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @staticmethod
    def as_error(err: BaseException | str) -> Status:
        if isinstance(err, BaseException):
            return Status(Code.ERROR, (str(err),), error=err)
        return Status(Code.ERROR, (err,))

    @staticmethod
    def skip() -> Status:
        return SKIP

    @staticmethod
    def wait(*reasons: str) -> Status:
        return Status(Code.WAIT, reasons)

    @staticmethod
    def pending(*reasons: str) -> Status:
        return Status(Code.PENDING, reasons)

    @property
    def message(self) -> str:
        """The reasons joined with ", " (Status.Message)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error)

    def __str__(self) -> str:
        return f"{self.code.label}: {self.message}" if self.reasons else self.code.label


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def is_success(status: Status | None) -> bool:
    """True for ``None`` and for a Success status."""
    return status is None or status.code == Code.SUCCESS
