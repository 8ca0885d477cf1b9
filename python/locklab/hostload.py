"""Was the machine quiet while a run measured?  Load samples around every driver process.

locklab times nothing itself; it asks the kernel how loaded the machine was.  Just before and just
after each driver process it reads

    /proc/loadavg       the 1, 5 and 15 minute load averages
    /proc/stat          the machine's CPU time in clock ticks: busy (everything but idle and
                        iowait; steal counts as busy, it is a neighbour VM's) and total
    getrusage           the CPU time and involuntary context switches of this process and of its
                        finished children (the driver, once it has been waited for)

and records them in the run's "host" object.  From them:

    other_cpu_share     CPU time used by everything except locklab and its driver during the run,
                        as a fraction of the machine's capacity over the same ticks:
                        (busy ticks / HZ - our CPU seconds) / (total ticks / HZ)
    nivcsw              the driver process's involuntary context switches (whole process)
    nivcsw_per_s        the driver's involuntary switches per second of its measuring window, from
                        the run record (result.nivcsw / result.elapsed_s), where it reports them

THE BUSY RULE (BUSY_RULE below, recorded in every results file).  A run was measured on a busy
machine when other processes used more than OTHER_CPU_MAX (10 %) of the machine's CPU time while it
ran.  A run shorter than MIN_TICKS clock ticks of machine time (50 ms on 2 CPUs) is "not judged"
(busy = null): /proc/stat counts in 10 ms ticks, too coarse to say.

THE WORK SPEED (recorded, not part of the rule).  A neighbour can slow the machine without using
its CPU time: on a KVM guest whose host core's other hardware thread is busy, or whose clock moves,
/proc/stat shows nothing, yet every instruction takes longer.  A mutex run times its busy-loop work
inside the window, on every 4th operation whose acquisition it times (the critical section from
1 us, the outside work from 1 us), and reports 1 / the median of (time taken / due by the bench's
busy-loop calibration) as result.window_work_speed.  That is the run's host.work_speed (1 = as fast
as when the calibration was made).  A run without such work in its window (or a record from before
the driver measured it) falls back to the reference taken alone, single-threaded, just before its
threads start: the critical section (result.cs_ns against result.work.cs_busy_ns), else the outside
work (parallel_ns, parallel_busy_ns), where it is at least SPEED_MIN_WORK_NS (100 ns: a shorter
body is mostly loop overhead).  `locklab bench` prints its range when it moved
(speed_sentence()), and the suite's summary gives it per experiment, with how many runs fell
below SPEED_MIN.  It does not make a run busy: on the 2-vCPU AMD EPYC guest an idle machine ran a
pinned busy loop at half speed 47-84 % of the time (two runs), in phases of 0.2 ms to 2 s, with fast bursts of
about 1 ms (docs/results/issue11-2core-amd/); the calibration, a best of 21, catches a burst, so a
rule would have withheld nearly every verdict there, while the interleaved repeats and the rank
statistics already carry that spread.  What the figure is for: a reader sees that ranges are wide
because the machine's speed moved, and how much.  The fallback reference is taken before the
window, so it samples the machine's speed, it does not measure the window's.

Two signals are recorded but are not part of the rule, because the lab's own runs move them:
    load averages       an oversubscribed cell (256 runnable spinning threads) raises them for
                        minutes after it ends, so they would flag the quiet runs that follow it;
    involuntary switches a lock's own wake-ups preempt its threads (the woken waiter preempts the
                        waker on its CPU), so the count mixes the lock's behaviour with the
                        neighbours'.  nivcsw_per_s is kept to look at, not to judge by.
"""

import os
import resource
import statistics

OTHER_CPU_MAX = 0.10
MIN_TICKS = 10
SPEED_MIN = 0.75
SPEED_MIN_WORK_NS = 100

BUSY_RULE = (f"a run is busy when other processes used more than {OTHER_CPU_MAX:.0%} of the "
             "machine's CPU time while it ran (/proc/stat busy ticks minus the CPU time of "
             f"locklab and its driver); runs shorter than {MIN_TICKS} clock ticks of machine "
             "time are not judged")

try:
    HZ = os.sysconf("SC_CLK_TCK")
except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
    HZ = 100


def _loadavg():
    try:
        with open("/proc/loadavg") as f:
            parts = f.read().split()
        return [float(x) for x in parts[:3]]
    except (OSError, ValueError, IndexError):
        return None


def _ticks():
    """(busy, total) clock ticks of the whole machine since boot, or None."""
    try:
        with open("/proc/stat") as f:
            line = f.readline().split()
    except OSError:
        return None
    if not line or line[0] != "cpu":
        return None
    v = [int(x) for x in line[1:9]] + [0] * max(0, 8 - len(line[1:9]))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return total - idle - iowait, total


def sample():
    """One sample of the machine's load and of our own CPU use."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"loadavg": _loadavg(), "ticks": _ticks(),
            "cpu_s": me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime,
            "nivcsw_children": ch.ru_nivcsw}


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def work_speed(record):
    """How fast a mutex run's work ran against the busy-loop calibration behind it: the driver's
    in-window figure (result.window_work_speed), else the single-threaded reference before the
    window, requested ns / measured ns of the critical section (else of the outside work); None
    where the run has neither (no busy work of at least SPEED_MIN_WORK_NS)."""
    res = record.get("result") if isinstance(record.get("result"), dict) else {}
    inside = _num(res.get("window_work_speed"))
    if inside is not None and inside > 0:
        return inside
    work = res.get("work") if isinstance(res.get("work"), dict) else {}
    for want, got in (("cs_busy_ns", "cs_ns"), ("parallel_busy_ns", "parallel_ns")):
        w, g = _num(work.get(want)), _num(res.get(got))
        if w is not None and g and w >= SPEED_MIN_WORK_NS:
            return w / g
    return None


def speed_summary(runs):
    """The work speeds of a results file's runs (stored host.work_speed, else computed from the
    record, for files written before it was recorded): {"min", "max", "median", "slow", "n"}, slow
    counting the runs below SPEED_MIN; None when no run has one."""
    speeds = []
    for r in runs:
        h = r.get("host") if isinstance(r.get("host"), dict) else {}
        v = _num(h.get("work_speed"))
        v = v if v is not None else work_speed(r)
        if v is not None:
            speeds.append(v)
    if not speeds:
        return None
    return {"min": min(speeds), "max": max(speeds), "median": statistics.median(speeds),
            "slow": sum(1 for v in speeds if v < SPEED_MIN), "n": len(speeds)}


def speed_sentence(runs):
    """One sentence on the runs' work speed, or None where it was steady (no run below SPEED_MIN
    and none above 1 / SPEED_MIN) or not measured."""
    sp = speed_summary(runs)
    if sp is None or (sp["slow"] == 0 and sp["max"] <= 1 / SPEED_MIN):
        return None
    return (f"work speed: the runs' timed work ran at {sp['min']:.2f}-{sp['max']:.2f}x the "
            f"busy-loop calibration's speed (median {sp['median']:.2f}x), {sp['slow']} of {sp['n']} "
            f"runs below {SPEED_MIN:g}x: this machine's speed moved during the bench, which widens "
            "every range (host.work_speed)")


def judge(before, after, record):
    """The run's "host" object from the samples taken around it and its run record."""
    host = {}
    if before["loadavg"] is not None:
        host["loadavg_before"] = before["loadavg"]
    if after["loadavg"] is not None:
        host["loadavg_after"] = after["loadavg"]
    host["nivcsw_before"] = before["nivcsw_children"]
    host["nivcsw_after"] = after["nivcsw_children"]
    host["nivcsw"] = max(0, after["nivcsw_children"] - before["nivcsw_children"])

    share = None
    if before["ticks"] is not None and after["ticks"] is not None:
        busy = after["ticks"][0] - before["ticks"][0]
        total = after["ticks"][1] - before["ticks"][1]
        host["cpu_ticks"] = max(0, total)
        if total >= MIN_TICKS:
            ours = max(0.0, after["cpu_s"] - before["cpu_s"])
            share = min(1.0, max(0.0, (busy / HZ - ours) / (total / HZ)))
    host["other_cpu_share"] = None if share is None else round(share, 4)

    res = record.get("result") if isinstance(record.get("result"), dict) else {}
    nivcsw, elapsed = _num(res.get("nivcsw")), _num(res.get("elapsed_s"))
    rate = nivcsw / elapsed if nivcsw is not None and elapsed else None
    host["nivcsw_per_s"] = None if rate is None else round(rate, 1)
    speed = work_speed(record)
    if speed is not None:
        host["work_speed"] = round(speed, 3)
    if share is not None and share > OTHER_CPU_MAX:
        host["busy"] = True
        host["busy_why"] = f"other processes used {share:.0%} of the CPU time"
    elif share is None:
        host["busy"] = None
        host["busy_why"] = "not judged: the run was too short to measure the machine's load"
    else:
        host["busy"] = False
    return host


def describe_now(online_cpus=None):
    """A line about the machine's load right now, or None when it looks quiet."""
    la = _loadavg()
    cpus = online_cpus or os.cpu_count() or 1
    if la is None or la[0] <= cpus:
        return None
    return (f"the machine is busy: load average {la[0]:.1f} on {cpus} CPUs; runs measured while "
            "others use the CPU are flagged, and a claim that rests on them gets no verdict")
