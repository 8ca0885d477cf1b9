"""Statistics on synthetic inputs whose answers are known."""

import numpy as np
import pytest

from locklab import stats as st


def test_summary_exact():
    s = st.summarize([3, 1, 2, 10])
    assert s["n"] == 4
    assert s["min"] == 1 and s["max"] == 10
    assert s["median"] == 2.5
    assert s["mean"] == 4.0
    assert s["stdev"] == pytest.approx(np.std([3, 1, 2, 10], ddof=1))
    assert s["values"] == [3.0, 1.0, 2.0, 10.0]  # run order kept
    assert st.summarize([7])["stdev"] == 0.0


def test_median_ci_contains_truth_and_is_reproducible():
    rng = np.random.default_rng(1)
    x = rng.normal(100.0, 5.0, size=60)  # true median 100
    lo, hi = st.bootstrap_median_ci(x)
    assert lo < 100.0 < hi
    assert lo <= np.median(x) <= hi
    assert hi - lo < 10.0  # the CI of a median of 60 samples with sd 5 is a few units wide
    assert st.bootstrap_median_ci(x) == [lo, hi]  # fixed seed: same input, same interval


def test_median_ci_single_and_constant():
    assert st.bootstrap_median_ci([5.0]) == [5.0, 5.0]
    assert st.bootstrap_median_ci([3.0, 3.0, 3.0]) == [3.0, 3.0]


def test_ratio_ci():
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    cand = [2 * v for v in base]
    lo, hi = st.bootstrap_ratio_ci(cand, base)
    assert lo <= 2.0 <= hi
    assert 1.9 < lo and hi < 2.1
    assert st.bootstrap_ratio_ci([4.0, 4.0], [2.0, 2.0]) == [2.0, 2.0]
    assert st.bootstrap_ratio_ci([1.0], [0.0, 0.0]) == [None, None]  # zero baseline: no ratio


def test_mannwhitney_separated_vs_identical():
    a = [10, 11, 12, 13, 14, 15, 16, 17]
    b = [20, 21, 22, 23, 24, 25, 26, 27]
    assert st.mannwhitney_p(a, b) < 0.001
    assert st.mannwhitney_p(a, a) > 0.9
    assert st.mannwhitney_p([5, 5, 5], [5, 5, 5]) == 1.0
    # n = 3 per side: the exact two-sided test cannot go below 2 / C(6,3) = 0.1
    assert st.mannwhitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert st.mannwhitney_p([1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(2 / 70)


@pytest.mark.parametrize("a,b,expect", [
    ([1, 2], [2, 3], True),      # touching ranges overlap
    ([1, 2], [2.1, 3], False),
    ([1, 10], [4, 5], True),     # containment
    ([5, 6], [1, 4.99], False),
])
def test_ranges_overlap(a, b, expect):
    assert st.ranges_overlap(a, b) is expect
    assert st.ranges_overlap(b, a) is expect


@pytest.mark.parametrize("ratio,p,overlap,hib,expect", [
    (1.5, 0.01, False, True, "faster"),
    (0.5, 0.01, False, True, "slower"),
    (0.5, 0.01, False, False, "faster"),  # lower is better: a smaller latency is faster
    (1.5, 0.01, False, False, "slower"),
    (1.5, 0.01, True, True, "tied"),      # overlapping ranges
    (1.5, 0.05, False, True, "tied"),     # p must be below 0.05
    (1.5, None, False, True, "tied"),
    (None, 0.01, False, True, "tied"),
])
def test_verdict(ratio, p, overlap, hib, expect):
    assert st.verdict(ratio, p, overlap, hib) == expect


def test_compare_samples_known():
    base = [100, 101, 102, 103, 104]
    cand = [150, 151, 152, 153, 154]
    c = st.compare_samples(cand, base)
    assert c["ratio"] == pytest.approx(152 / 102)
    assert c["overlap"] is False
    assert c["mannwhitney_p"] < 0.05
    assert c["verdict"] == "faster"
    assert st.compare_samples(cand, base, higher_is_better=False)["verdict"] == "slower"
    t = st.compare_samples([100, 105, 99, 102, 101], base)
    assert t["overlap"] is True and t["verdict"] == "tied"


def test_winner_and_ties():
    stats = {
        "a": st.summarize([10, 11, 12, 13]),
        "b": st.summarize([10.5, 11.5, 12.5, 13.5]),   # overlaps a
        "c": st.summarize([1, 2, 3, 4]),
    }
    assert st.winner(stats) == ("b", ["a"])
    w, tied = st.winner(stats, higher_is_better=False)
    assert w == "c" and tied == []


def test_secondary_medians():
    res = [{"cpu_ns_per_op": 10, "latency": {"p99_ns": 300}, "fairness_jain": 1.0},
           {"cpu_ns_per_op": 30, "latency": {"p99_ns": 100}},
           {"cpu_ns_per_op": 20, "latency": {"p99_ns": 200}, "serial_fraction": None}]
    sec = st.secondary_medians(res)
    assert sec == {"cpu_ns_per_op": 20.0, "fairness_jain": 1.0, "p99_ns": 200.0}


def test_bad_samples_rejected():
    with pytest.raises(ValueError):
        st.summarize([])
    with pytest.raises(ValueError):
        st.summarize([1.0, float("nan")])


def test_pct_delta():
    assert st.pct_delta(1616781, 1394938) == pytest.approx(15.9, abs=0.05)  # seed-001's average
    assert st.pct_delta(1, 0) is None


@pytest.mark.parametrize("metric, hib", [
    ("ops_per_sec", True), ("fairness_jain", True), ("finish_s", False), ("slowest_thread_s", False),
    ("p99_ns", False), ("p999_ns", False), ("thread_time_spread", False), ("cpu_ns_per_op", False),
])
def test_metric_directions(metric, hib):
    assert st.higher_is_better(metric) is hib


def test_unknown_direction_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="no known direction for metric 'bogus_metric'"):
        st.higher_is_better("bogus_metric")


def test_direction_aware_verdict_on_times_to_finish():
    """A batch that finishes in less time is the better one: the verdict must read finish_s through
    its direction, or a lock twice as slow would be called faster."""
    quick = [1.00, 1.01, 1.02, 1.03, 1.04]   # seconds to finish
    slow = [2.00, 2.01, 2.02, 2.03, 2.04]
    hib = st.higher_is_better("finish_s")
    c = st.compare_samples(quick, slow, hib)
    assert c["ratio"] == pytest.approx(1.02 / 2.02) and c["verdict"] == "faster"
    assert st.compare_samples(slow, quick, hib)["verdict"] == "slower"
    sums = {"quick": st.summarize(quick), "slow": st.summarize(slow),
            "close": st.summarize([1.02, 1.05, 1.06, 1.07, 1.08])}  # overlaps quick's range
    assert st.winner(sums, hib) == ("quick", ["close"])
    # the same numbers as throughputs: now the larger wins
    assert st.winner(sums, st.higher_is_better("ops_per_sec")) == ("slow", [])


def test_metric_values_follow_secondary_paths():
    res = [{"latency": {"p999_ns": 900, "p99_ns": 90}, "finish_s": 1.5},
           {"latency": {"samples": 0}, "finish_s": 2.5},       # no samples: no p99.9
           {"latency": {"p999_ns": 700}, "finish_s": None}]
    assert st.metric_values(res, "p999_ns") == [900.0, 700.0]
    assert st.metric_values(res, "finish_s") == [1.5, 2.5]
    assert st.metric_values(res, "nothing_here") == []


def test_fmt_ratio_without_a_ci():
    # a baseline with a zero-throughput run: the bootstrap CI cannot be computed ([None, None]);
    # the tables must say so instead of raising TypeError (seen in suite.targets_md)
    c = st.compare_samples([10.0, 11.0], [0.0, 9.0], True)
    assert c["ratio_ci95"] == [None, None]
    assert st.fmt_ratio(c) == f"{c['ratio']:.2f}x [n/a, n/a]"
    assert st.fmt_ratio({"ratio": None, "ratio_ci95": None}) == "n/a [n/a, n/a]"
    assert st.fmt_ratio({"ratio": 1.234, "ratio_ci95": [1.1, 1.3]}, ".3g") == "1.23x [1.1, 1.3]"
