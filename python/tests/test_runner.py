"""Plan building: value parsing, cartesian product, run order (repeats outer, shuffled locks)."""

import pytest

from locklab import runner
from locklab.driver import Param, Workload
from locklab.errors import UsageError

WL = Workload({"name": "w", "metric": "m", "higher_is_better": True, "params": [
    {"name": "lock", "type": "alg", "default": None, "choices": "mutex", "axis": False},
    {"name": "threads", "type": "uint", "default": "1", "min": 1, "max": 4096, "axis": True},
    {"name": "load", "type": "uint", "default": "0", "min": 0, "max": 100, "axis": True},
]})


def test_cartesian_product_order():
    p = runner.Plan(WL, ["a", "b"], {"threads": [1, 2, 10], "load": [0, 50]}, {}, repeat=1)
    assert p.cells == [{"threads": 1, "load": 0}, {"threads": 1, "load": 50},
                       {"threads": 2, "load": 0}, {"threads": 2, "load": 50},
                       {"threads": 10, "load": 0}, {"threads": 10, "load": 50}]
    assert p.total_runs == 12
    assert runner.Plan(WL, ["a"], {}, {"threads": 4}, repeat=2).cells == [{}]


def test_schedule_repeats_outer_and_each_lock_once_per_cell():
    locks = ["a", "b", "c", "d"]
    p = runner.Plan(WL, locks, {"threads": [1, 2]}, {}, repeat=3, seed=7)
    s = p.schedule()
    assert len(s) == 3 * 2 * 4
    # repeats are the outer loop: repeat numbers never decrease
    assert [r for r, _, _ in s] == sorted(r for r, _, _ in s)
    for r in range(3):
        for ci in range(2):
            block = [lk for rr, cc, lk in s if rr == r and cc == ci]
            assert sorted(block) == locks
    # cells in order inside each repeat
    assert [ci for r, ci, _ in s if r == 0] == [0] * 4 + [1] * 4


def test_shuffle_is_seeded_and_actually_shuffles():
    locks = ["a", "b", "c", "d", "e"]
    mk = lambda seed, sh=True: runner.Plan(WL, locks, {"threads": [1, 2, 3, 4]}, {}, repeat=3,
                                           seed=seed, shuffle=sh).schedule()
    assert mk(1) == mk(1)
    assert mk(1) != mk(2)
    orders = {tuple(lk for r, c, lk in mk(1) if (r, c) == key)
              for key in {(r, c) for r, c, _ in mk(1)}}
    assert len(orders) > 1  # not the same permutation in every cell
    plain = mk(1, sh=False)
    assert all(tuple(lk for r, c, lk in plain if (r, c) == (0, ci)) == tuple(locks)
               for ci in range(4))


def test_baseline_must_be_benched():
    assert runner.Plan(WL, ["a", "b"], {}, {}, 1).baseline == "a"
    assert runner.Plan(WL, ["a", "b"], {}, {}, 1, baseline="b").baseline == "b"
    with pytest.raises(UsageError, match="--baseline: expected one of the benched locks"):
        runner.Plan(WL, ["a", "b"], {}, {}, 1, baseline="zz")


def test_driver_args_typed_text():
    p = runner.Plan(WL, ["a"], {"threads": [1, 2]}, {"duration": 0.2}, 1)
    assert p.driver_args(1, "a") == [("duration", "0.2"), ("threads", "2"), ("lock", "a")]


ALGS = [{"family": "mutex", "name": "m1", "available": True},
        {"family": "mutex", "name": "m2", "available": False, "missing": "no libfoo"},
        {"family": "spinlock", "name": "s1", "available": True}]


@pytest.mark.parametrize("param,text,msg", [
    ({"name": "threads", "type": "uint", "min": 1, "max": 4096}, "0",
     "--threads: expected an integer in [1, 4096], got '0'"),
    ({"name": "threads", "type": "uint", "min": 1, "max": 4096}, "-3",
     "--threads: expected an integer in [1, 4096], got '-3'"),
    ({"name": "threads", "type": "uint", "min": 1, "max": 4096}, "2.5",
     "--threads: expected an integer in [1, 4096], got '2.5'"),
    ({"name": "duration", "type": "double", "min": 0.01, "max": 3600}, "-1",
     "--duration: expected a number in [0.01, 3600], got '-1'"),
    ({"name": "duration", "type": "double", "min": 0.01, "max": 3600}, "nan",
     "--duration: expected a number in [0.01, 3600], got 'nan'"),
    ({"name": "mode", "type": "str", "choices": "x,y"}, "z",
     "--mode: expected one of x, y, got 'z'"),
    ({"name": "lock", "type": "alg", "choices": "mutex"}, "s1",
     "--lock: expected one of the mutex algorithms (m1, m2), got 's1'"),
    ({"name": "lock", "type": "alg", "choices": "mutex"}, "m2",
     "--lock: 'm2' is not available in this build: no libfoo"),
])
def test_parse_value_errors(param, text, msg):
    with pytest.raises(UsageError) as e:
        runner.parse_value(Param(param), text, ALGS)
    assert e.value.message == msg
    assert e.value.status == 2


def test_parse_value_ok():
    assert runner.parse_value(Param({"name": "t", "type": "uint", "min": 0, "max": 9}), "9") == 9
    assert runner.parse_value(Param({"name": "d", "type": "double", "min": 0, "max": 1}),
                              "0.25") == 0.25
    assert runner.parse_value(Param({"name": "lock", "type": "alg", "choices": "mutex,spinlock"}),
                              "s1", ALGS) == "s1"


def test_split_list():
    assert runner.split_list("a, b,a,c", "--x") == ["a", "b", "c"]
    for text in (",,", "2,,4", "2,", ",2", "", " "):
        with pytest.raises(UsageError, match="--x: expected a"):
            runner.split_list(text, "--x")


def test_baseline_without_lock_param():
    with pytest.raises(UsageError, match="has no --lock to compare"):
        runner.Plan(WL, [], {}, {}, 1, baseline="a")
    p = runner.Plan(WL, [], {"threads": [1, 2]}, {}, 2)
    assert p.schedule() == [(0, 0, None), (0, 1, None), (1, 0, None), (1, 1, None)]
    assert p.driver_args(0, None) == [("threads", "1")]
