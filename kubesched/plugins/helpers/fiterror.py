"""The FailedScheduling message of a pod no node fits (framework/types.go: FitError.Error),
and the event recorder's length cap (schedule_one.go: truncateMessage).

Shared by the scheduler (the step message) and DefaultPreemption (its "no candidate"
message is a FitError over the dry-run statuses).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from kubesched.framework import Status

# framework.NoNodeAvailableMsg ("0/%v nodes are available").
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
# validation.NoteLengthLimit: an event's note is capped at this many bytes.
EVENT_NOTE_LENGTH_LIMIT = 1024
_TRUNCATION_SUFFIX = " ..."


def reasons_histogram(statuses: Iterable[Status | None]) -> list[str]:
    """Every reason of every status counted, as ``"<count> <reason>"`` strings sorted as
    strings (Go's sort.Strings: byte order, so "10 X" sorts before "2 Y")."""
    # Nodes share Status objects (one per distinct failure): count the objects (in C), then
    # each one's reasons once.
    listed = statuses if isinstance(statuses, list | tuple) else list(statuses)
    ids = list(map(id, listed))
    objects = dict(zip(ids, listed, strict=True))
    counts: dict[str, int] = {}
    for key, times in Counter(ids).items():
        status = objects[key]
        if status is None:
            continue
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + times
    # UTF-8 byte order equals code point order, which is how Python compares str.
    return sorted(f"{n} {reason}" for reason, n in counts.items())


def fit_error_message(num_all_nodes: int, statuses: Mapping[str, Status | None], pre_filter_msg: str = "",
                      post_filter_msg: str = "") -> str:
    """FitError.Error():

    ``0/<N> nodes are available:``, then `` <PreFilterMsg>.`` when PreFilter rejected the pod
    (no per-node histogram then, since every node carries that same status), otherwise
    `` <histogram>.`` when any node has a reason, and finally `` <PostFilterMsg>`` (no period
    added: the preemption message brings its own).
    """
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram = reasons_histogram(statuses.values())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg


def truncate_event_message(message: str) -> str:
    """truncateMessage: an event note longer than 1024 bytes becomes its first 1020 bytes
    plus `` ...``. Go slices bytes; a cut inside a multi-byte character leaves invalid
    UTF-8, which Go's JSON encoding turns into U+FFFD — so does ``errors="replace"``."""
    data = message.encode("utf-8")
    if len(data) <= EVENT_NOTE_LENGTH_LIMIT:
        return message
    head = data[: EVENT_NOTE_LENGTH_LIMIT - len(_TRUNCATION_SUFFIX)]
    return head.decode("utf-8", errors="replace") + _TRUNCATION_SUFFIX
