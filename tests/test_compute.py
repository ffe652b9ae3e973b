"""Tests of rlexplain.compute's shared per-state timing loop, `time_round_robin`, driven by a fake clock: every recorded
time is known exactly, whatever the machine's load (no test here reads the real clock)."""
import pytest

from rlexplain.compute import time_round_robin


def fake_timer(cost):
    "A clock that only the calls advance: call(m, i) adds cost[m] seconds. Returns (call, clock, log of calls)."
    now, log = [0.0], []
    def call(m, i): log.append((m, i)); now[0] += cost[m]
    return call, (lambda: now[0]), log


def test_time_round_robin_rotates_warms_up_untimed_and_records_exact_seconds():
    cost = {"a": 1.0, "b": 2.0, "c": 4.0}
    call, clock, log = fake_timer(cost)
    rows = time_round_robin(call, ["a", "b", "c"], 5, clock=clock)
    assert log[:3] == [("a", 0), ("b", 0), ("c", 0)] and len(log) == 3 + 15      # the warm-ups, then N * M timed calls
    assert rows[:6] == [(0, "a", 0, 1.0), (0, "b", 1, 2.0), (0, "c", 2, 4.0),
                        (1, "b", 0, 2.0), (1, "c", 1, 4.0), (1, "a", 2, 1.0)]
    assert [m for _, m, _, _ in rows] == list("abc" "bca" "cab" "abc" "bca")      # rotated left by i mod M
    assert [(m, i) for i, m, _, _ in rows] == log[3:]                              # rows in the order timed
    assert all(s == cost[m] for _, m, _, s in rows)                                # the warm-ups' cost is not charged
    assert all(sorted(p for i, mm, p, _ in rows if mm == m and i < 3) == [0, 1, 2] for m in cost)   # each place once


def test_time_round_robin_without_warmup_and_bad_input():
    call, clock, log = fake_timer({"a": 0.5})
    assert time_round_robin(call, ("a",), 2, warmup=False, clock=clock) == [(0, "a", 0, 0.5), (1, "a", 0, 0.5)]
    assert log == [("a", 0), ("a", 1)]
    log.clear()
    for methods, n, msg in ((["a", "a"], 2, "distinct"), ([], 2, "not empty"), (["a"], 0, "n must be an int >= 1"),
                            (["a"], 1.5, "n must be an int >= 1"), (["a"], True, "n must be an int >= 1")):
        with pytest.raises(ValueError, match=msg): time_round_robin(call, methods, n, clock=clock)
    assert log == []                                                                 # bad input fails before any call
