"""AllocatedTracker: the devices of every allocated claim, updated from what changed since the
last call, equal to gathering them anew (allocated_state) whatever happens to the claims in
between: allocations added, claims deleted, deallocated or re-allocated elsewhere."""

from __future__ import annotations

import dataclasses
import random

import pytest

from kubesched.objects import ObjectMeta
from kubesched.objects.devices import AllocationResult, ClaimSpec, DeviceResult, ResourceClaim
from kubesched.plugins.dynamicresources.allocator import AllocatedTracker, allocated_state


def claim(i: int, devices: tuple[str, ...] | None) -> ResourceClaim:
    alloc = None if devices is None else AllocationResult(tuple(
        DeviceResult("gpu", "drv", f"pool-{d[0]}", d, False) for d in devices))
    return ResourceClaim(ObjectMeta(name=f"c{i}", namespace="default", uid=f"uid-{i}"), ClaimSpec(), alloc)


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"random claim history {s} tracks like a fresh gather")
def test_the_tracker_equals_a_fresh_gather(seed: int) -> None:
    rng = random.Random(seed)
    claims: dict[int, ResourceClaim] = {}
    tracker = AllocatedTracker()
    size = rng.choice([12, 300])  # many claims: few changes among long stretches of the same objects
    for i in range(size if size > 12 else 0):
        claims[i] = claim(i, (f"{i % 3}-{i}",))
    for _ in range(60):
        op = rng.random()
        i = rng.randrange(size)
        if op < 0.05 and i in claims:
            held = claims[i].allocation
            # A new object, equal to the old one.
            claims[i] = claim(i, tuple(r.device for r in held.devices) if held is not None else None)
        if op < 0.5:
            devs = tuple(f"{rng.randrange(3)}-{rng.randrange(4)}" for _ in range(rng.randint(1, 2)))
            claims[i] = claim(i, devs)
        elif op < 0.7:
            claims.pop(i, None)
        elif op < 0.85 and i in claims:
            claims[i] = dataclasses.replace(claims[i], allocation=None)
        elif i in claims:
            claims[i] = dataclasses.replace(claims[i], reserved_for=())  # same allocation object
        got = tracker.state(list(claims.values()), consumable=True)
        want = allocated_state(list(claims.values()), consumable=True)
        assert (got.devices, got.shared, got.capacity) == (want.devices, want.shared, want.capacity)
        got.devices.add(("x", "y", "z"))  # type: ignore[arg-type]  # a copy: the tracker is unharmed
