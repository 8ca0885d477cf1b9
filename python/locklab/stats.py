"""Statistics on repeated runs.

Every number the lab reports is a distribution of R repeats, one driver process each.  This module turns
those samples into what a reviewer asks for (see the seed documents 001 and 004):

    summarize(values)       n, values, min/median/mean/max, stdev, bootstrap 95% CI of the median
    compare_samples(c, b)   candidate vs baseline: ratio of medians with a bootstrap CI, Mann-Whitney U
                            two-sided p, whether the [min, max] ranges overlap, and a verdict
    verdict(...)            faster / slower / tied: tied when the ranges overlap OR p >= ALPHA, otherwise
                            the direction of the median ratio, read through higher_is_better
    winner(stats, hib)      the lock with the best median, and every lock statistically tied with it
    higher_is_better(m)     the direction of a metric the lab reports, by name (HIGHER_IS_BETTER); a
                            verdict on any metric reads it from here, so that a time to finish or a
                            latency is judged "faster" when it is smaller
    metric_values(rs, m)    a metric's value in each run record's "result" (SECONDARY paths)

The bootstrap uses a fixed seed so that the same inputs always give the same intervals (results files are
diffable).  Note on small samples: with n = 3 per side the exact Mann-Whitney test cannot go below
p = 0.1, so a verdict other than "tied" needs at least 4 repeats per side.
"""

import math

import numpy as np
from scipy import stats as _sps

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20140716  # fixed: identical inputs give identical intervals

# Secondary fields reported next to the primary metric (median over repeats, when present).
# name in the stats -> path inside the run record's "result"
SECONDARY = {
    "cpu_ns_per_op": ("cpu_ns_per_op",),
    "fairness_jain": ("fairness_jain",),
    "p99_ns": ("latency", "p99_ns"),
    "p999_ns": ("latency", "p999_ns"),
    "thread_p99_max_ns": ("latency", "thread_p99_max_ns"),
    "thread_p99_median_ns": ("latency", "thread_p99_median_ns"),
    "threads_sampled": ("latency", "threads_sampled"),
    "serial_fraction": ("serial_fraction",),
    "slowest_thread_s": ("slowest_thread_s",),
    "thread_time_spread": ("thread_time_spread",),
}

# The direction of every metric a verdict may be asked about: True when higher is better.
HIGHER_IS_BETTER = {
    "ops_per_sec": True,
    "serial_fraction": True,
    "fairness_jain": True,
    "min_share": True,
    "cpu_ns_per_op": False,
    "p50_ns": False,
    "p90_ns": False,
    "p99_ns": False,
    "p999_ns": False,
    "thread_p99_max_ns": False,
    "thread_p99_median_ns": False,
    "max_ns": False,
    "finish_s": False,
    "slowest_thread_s": False,
    "median_thread_s": False,
    "thread_time_spread": False,
    "start_skew_s": False,
    "ns_per_op": False,
}


def _arr(values):
    a = np.asarray([float(v) for v in values], dtype=float)
    if a.size == 0:
        raise ValueError("no samples")
    if not np.all(np.isfinite(a)):
        raise ValueError("samples must be finite numbers")
    return a


def _rng():
    return np.random.default_rng(BOOTSTRAP_SEED)


def _boot_medians(a, rng, resamples):
    idx = rng.integers(0, a.size, size=(resamples, a.size))
    return np.median(a[idx], axis=1)


def bootstrap_median_ci(values, resamples=BOOTSTRAP_RESAMPLES, level=0.95):
    """Percentile-bootstrap confidence interval of the median: [lo, hi]."""
    a = _arr(values)
    if a.size == 1:
        return [float(a[0]), float(a[0])]
    m = _boot_medians(a, _rng(), resamples)
    tail = (1.0 - level) / 2.0 * 100.0
    return [float(np.percentile(m, tail)), float(np.percentile(m, 100.0 - tail))]


def bootstrap_ratio_ci(cand, base, resamples=BOOTSTRAP_RESAMPLES, level=0.95):
    """Bootstrap CI of median(cand) / median(base), resampling both sides independently.

    Returns [lo, hi], or [None, None] when a resampled baseline median can be zero.
    """
    c, b = _arr(cand), _arr(base)
    rng = _rng()
    mc = _boot_medians(c, rng, resamples) if c.size > 1 else np.full(resamples, c[0])
    mb = _boot_medians(b, rng, resamples) if b.size > 1 else np.full(resamples, b[0])
    if np.any(mb == 0):
        return [None, None]
    r = mc / mb
    tail = (1.0 - level) / 2.0 * 100.0
    return [float(np.percentile(r, tail)), float(np.percentile(r, 100.0 - tail))]


def mannwhitney_p(a, b):
    """Two-sided Mann-Whitney U p-value (scipy picks the exact test for small samples without ties)."""
    a, b = _arr(a), _arr(b)
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        return 1.0  # identical constants: scipy warns and returns nan; they are indistinguishable
    return float(_sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def ranges_overlap(a, b):
    """Whether [min(a), max(a)] and [min(b), max(b)] intersect (touching counts as overlap)."""
    a, b = _arr(a), _arr(b)
    return bool(a.min() <= b.max() and b.min() <= a.max())


def verdict(ratio, p, overlap, higher_is_better=True, alpha=ALPHA):
    """faster / slower / tied for candidate vs baseline, where ratio = median(cand) / median(base)."""
    if overlap or p is None or not (p < alpha) or ratio is None or ratio == 1.0:
        return "tied"
    better = ratio > 1.0 if higher_is_better else ratio < 1.0
    return "faster" if better else "slower"


def _clean(x):
    """NaN/inf are not JSON: they become None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def summarize(values):
    """n, values, min, median, mean, max, stdev (sample, 0 for n = 1), ci95 of the median."""
    a = _arr(values)
    return {
        "n": int(a.size),
        "values": [float(v) for v in a],
        "min": float(a.min()),
        "median": float(np.median(a)),
        "mean": float(a.mean()),
        "max": float(a.max()),
        "stdev": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        "ci95": bootstrap_median_ci(a),
    }


def secondary_medians(results):
    """Median of each SECONDARY field over the run records' "result" objects, where present."""
    out = {}
    for name in SECONDARY:
        vals = metric_values(results, name)
        if vals:
            out[name] = float(np.median(vals))
    return out


def compare_samples(cand, base, higher_is_better=True):
    """Candidate vs baseline: ratio of medians, its bootstrap CI, Mann-Whitney p, overlap, verdict."""
    c, b = _arr(cand), _arr(base)
    mb = float(np.median(b))
    ratio = _clean(float(np.median(c)) / mb) if mb != 0 else None
    p = mannwhitney_p(c, b)
    ov = ranges_overlap(c, b)
    return {
        "ratio": ratio,
        "ratio_ci95": [_clean(x) for x in bootstrap_ratio_ci(c, b)],
        "mannwhitney_p": _clean(p),
        "overlap": ov,
        "verdict": verdict(ratio, p, ov, higher_is_better),
    }


def fmt_ratio(c, spec=".2f"):
    """A compare_samples() result as "1.23x [1.10, 1.35]": "n/a" for a ratio or a CI bound that could
    not be computed (a zero median or a run with zero operations in the baseline)."""
    def num(x):
        return "n/a" if x is None else format(x, spec)
    ci = c.get("ratio_ci95") or [None, None]
    r = "n/a" if c.get("ratio") is None else f"{format(c['ratio'], spec)}x"
    return f"{r} [{num(ci[0])}, {num(ci[1])}]"


def winner(stats, higher_is_better=True):
    """(name, [names tied with it]) over {name: summary}: best median, ties by compare_samples."""
    if not stats:
        return None, []
    key = (lambda n: stats[n]["median"]) if higher_is_better else (lambda n: -stats[n]["median"])
    best = max(stats, key=key)
    tied = [n for n in stats if n != best and
            compare_samples(stats[n]["values"], stats[best]["values"], higher_is_better)["verdict"]
            == "tied"]
    return best, tied


def higher_is_better(metric):
    """True when a larger value of `metric` is better; ValueError for a metric of unknown direction
    (a verdict must never guess which way is better)."""
    try:
        return HIGHER_IS_BETTER[metric]
    except KeyError:
        raise ValueError(f"no known direction for metric '{metric}'") from None


def metric_values(results, metric):
    """The finite values of `metric` (a SECONDARY name, else a top-level key) in each run record's
    "result", in order; runs without it are left out."""
    path = SECONDARY.get(metric, (metric,))
    out = []
    for r in results:
        v = r
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def pct_delta(cand, base):
    """(cand - base) / base in percent, None when base is 0."""
    return None if base == 0 else (cand - base) / base * 100.0
