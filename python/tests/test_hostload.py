"""The speed rule of hostload.py: a run's reference work against the busy-loop calibration."""

from locklab import hostload, suite


def rec(cs_busy=None, cs=None, par_busy=None, par=None):
    work = {k: v for k, v in (("cs_busy_ns", cs_busy), ("parallel_busy_ns", par_busy)) if v is not None}
    res = {k: v for k, v in (("cs_ns", cs), ("parallel_ns", par)) if v is not None}
    if work:
        res["work"] = work
    return {"result": res}


def sample(busy_ticks, total_ticks, cpu_s=0.0):
    return {"loadavg": [0.0, 0.0, 0.0], "ticks": (busy_ticks, total_ticks), "cpu_s": cpu_s,
            "nivcsw_children": 0}


def test_work_speed_of_the_critical_section_then_the_outside_work():
    assert hostload.work_speed(rec(2000, 4000)) == 0.5
    assert hostload.work_speed(rec(2000, 1000)) == 2.0
    # too short a body to judge by: the outside work decides, or nothing does
    assert hostload.work_speed(rec(1, 5, 1000, 1250)) == 0.8
    assert hostload.work_speed(rec(1, 5)) is None
    assert hostload.work_speed(rec(99.9, 300)) is None
    assert hostload.work_speed(rec(100, 200)) == 0.5
    # no calibration (pauses only, or another workload), or a reference that is missing or 0
    assert hostload.work_speed({"result": {"cs_ns": 100}}) is None
    assert hostload.work_speed(rec(1000, 0)) is None
    assert hostload.work_speed(rec(1000, None)) is None
    assert hostload.work_speed(rec(True, 1000)) is None
    assert hostload.work_speed({}) is None


def test_work_speed_prefers_the_window_figure():
    r = rec(2000, 4000)
    r["result"]["window_work_speed"] = 0.9
    assert hostload.work_speed(r) == 0.9
    # null (nothing timed in the window), zero or a non-number: the reference before the window
    for v in (None, 0, "fast", True):
        r["result"]["window_work_speed"] = v
        assert hostload.work_speed(r) == 0.5, v
    assert hostload.work_speed({"result": {"window_work_speed": 1.2}}) == 1.2


def test_judge_records_the_work_speed_and_keeps_the_share_rule():
    quiet = (sample(0, 0), sample(10, 200))      # 5 % of the machine: under 10 %
    loaded = (sample(0, 0), sample(40, 200))     # 20 %
    h = hostload.judge(*quiet, rec(1000, 1010))
    assert h["busy"] is False and h["work_speed"] == 0.99
    # a slowed machine is recorded, not judged busy (docstring: the AMD guest)
    h = hostload.judge(*quiet, rec(1000, 2500))
    assert h["busy"] is False and h["work_speed"] == 0.4
    h = hostload.judge(*loaded, rec(1000, 1000))
    assert h["busy"] is True and h["busy_why"] == "other processes used 20% of the CPU time"
    short = (sample(0, 0), sample(1, 2))
    assert hostload.judge(*short, rec(1000, 2000))["busy"] is None
    assert "work_speed" not in hostload.judge(*short, rec())


def test_the_suite_summary_line():
    runs = [{"host": {"busy": False, "work_speed": 1.0}},
            {"host": {"busy": True, "busy_why": "other processes used 30% of the CPU time",
                      "work_speed": 0.9}},
            {"host": {"busy": True, "busy_why": "the machine ran ...", "work_speed": 0.5}},
            # an older file: no work_speed stored, computed from the record
            {"host": {"busy": False}, **rec(1000, 2500)},
            {"host": {"busy": None}}]
    line = suite.host_md({"runs": runs})[0]
    assert line.startswith("Busy machine (the file's busy_rule): 2 of 4 judged runs.")
    assert "ran at 0.40-1.00x the calibrated speed (median 0.70x), 2 of 4 runs below 0.75x" in line
    assert "weaker evidence" in line
    assert "measured again" not in line
    runs[0]["host"]["retried_why"] = ["a", "b"]
    runs[2]["host"]["retried_why"] = ["c"]
    assert ("2 runs were measured again (--retry-busy), 3 tries thrown away in all"
            in suite.host_md({"runs": runs})[0])
    assert suite.host_md({"runs": [{"host": {}}]}) == []
    quiet = suite.host_md({"runs": [{"host": {"busy": False, "work_speed": 1.0}}]})[0]
    assert "0 of 1 runs below" in quiet and "weaker" not in quiet
    # a calibration made in a slow moment: no run below, but runs far above it
    fast = suite.host_md({"runs": [{"host": {"busy": False, "work_speed": v}} for v in (1.0, 1.5)]})
    assert "0 of 2 runs below" in fast[0] and "weaker" in fast[0]


def test_speed_sentence_only_when_the_speed_moved():
    steady = [{"host": {"work_speed": v}} for v in (0.95, 1.0, 1.2)]
    assert hostload.speed_sentence(steady) is None
    assert hostload.speed_sentence([{"host": {}}]) is None
    # one slow run, or one far faster than the calibration (a calibration made in a slow moment)
    slow = steady + [{"host": {"work_speed": 0.5}}]
    text = hostload.speed_sentence(slow)
    assert text.startswith("work speed: the runs' timed work ran at 0.50-1.20x")
    assert "(median 0.97x), 1 of 4 runs below 0.75x" in text
    fast = [{"host": {"work_speed": v}} for v in (1.0, 1.5)]
    assert "1.00-1.50x" in hostload.speed_sentence(fast)
    # older files: computed from the record
    assert hostload.speed_summary([{"host": {}, **rec(1000, 2000)}])["min"] == 0.5
