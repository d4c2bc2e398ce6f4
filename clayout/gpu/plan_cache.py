"""Kernel plans kept per problem shape: a primitive made again plans nothing.

A plan depends on the problem's kind, descriptors, shuffle and attribute
kinds (masks and groups), and on the device profile; never on attribute
values, which reach the kernel as arguments. So plans are kept under those
frozen values, and a Reorder made again, with other scales too, finds its
plan without calling the planner.
"""
from __future__ import annotations

import os
import threading

from ..errors import InvalidArgumentError
from ..problem import Problem
from . import plan as _plan
from .plan_types import KernelPlan
from .profile import DeviceProfile


#: Plans kept when CLAYOUT_PLAN_CACHE does not say.
DEFAULT_CAPACITY = 1024


def _capacity_from_env() -> int:
    text = os.environ.get("CLAYOUT_PLAN_CACHE", "").strip()
    if not text:
        return DEFAULT_CAPACITY
    if not text.isdigit():
        raise InvalidArgumentError(
            f"CLAYOUT_PLAN_CACHE={text!r}: expected how many plans to keep (0 keeps none)")
    return int(text)


class PlanCache:
    """Plans by (kind, src_md, dst_md, attribute kinds, shuffle, profile),
    at most ``capacity`` of them (the oldest made dropped first; 0: none
    kept; None: CLAYOUT_PLAN_CACHE's number, read when the first plan is
    made, else DEFAULT_CAPACITY). ``misses`` counts the plans made, ``hits``
    those found."""

    def __init__(self, capacity: int | None = None):
        self.capacity = capacity
        self.hits = self.misses = 0
        self._plans: dict = {}  # in the order they were made
        self._lock = threading.Lock()

    def get(self, problem: Problem, profile: DeviceProfile) -> KernelPlan:
        """The plan ``plan_kernel(problem, profile)`` makes, made once per key."""
        # The profile by identity (engines share one per device and strategy),
        # which skips hashing its fields; the entry holds the profile, so its
        # id cannot pass to another object while the entry lives.
        key = (problem.kind, problem.src_md, problem.dst_md, problem.attr_kinds,
               problem.shuffle, id(profile))
        entry = self._plans.get(key)  # one dict read: safe without the lock
        if entry is not None and entry[0] is profile:
            self.hits += 1  # a count for tests and users, not a guard
            return entry[1]
        # Planned outside the lock: two threads may both plan a new shape
        # (to equal plans); none waits on another's planning.
        plan = _plan.plan_kernel(problem, profile)  # looked up each call: tests count it
        with self._lock:
            self.misses += 1
            if self.capacity is None:
                self.capacity = _capacity_from_env()  # raises InvalidArgumentError
            if self.capacity > 0:
                self._plans[key] = (profile, plan)
                while len(self._plans) > self.capacity:
                    del self._plans[next(iter(self._plans))]
        return plan

    def clear(self) -> None:
        """Forget every plan (the next creation of each shape plans again)."""
        with self._lock:
            self._plans.clear()

    def __len__(self):
        return len(self._plans)

    def __repr__(self):
        return (f"<PlanCache: {len(self)} plans of {self.capacity}, {self.hits} hits, "
                f"{self.misses} planned>")


#: The process's plans; CLAYOUT_PLAN_CACHE sets how many are kept (0 none).
plan_cache = PlanCache()
