#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""apps/py-threads.py - a threaded Python 3 program for `locklab apps`.

CPython's global interpreter lock is a pthread mutex plus a pthread condition variable (Python/
ceval_gil.h: take_gil waits on the condvar with a timed wait, drop_gil signals it), so every switch
between Python threads goes through the shim. T threads run pure-Python work on items taken from a
queue.Queue and put results on another; the switch interval is lowered to 50 us so that the GIL
changes hands often, as it does in a busy threaded server. The output is one line that does not
depend on the schedule:

    py-threads: threads=T items=N checksum=...

Usage: py-threads.py [--threads T] [--items N] [--work W]; bad arguments: one line, exit 2.
"""
import argparse
import queue
import sys
import threading


def work(x, rounds):
    h = x
    for _ in range(rounds):
        h = (h * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 29
    return h


def main():
    p = argparse.ArgumentParser(prog="py-threads.py")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--items", type=int, default=20000)
    p.add_argument("--work", type=int, default=40)
    a = p.parse_args()
    for name, v, lo, hi in (("--threads", a.threads, 1, 256), ("--items", a.items, 1, 10**8),
                            ("--work", a.work, 0, 10**6)):
        if not lo <= v <= hi:
            print(f"py-threads.py: {name}: expected an integer in [{lo}, {hi}], got '{v}'", file=sys.stderr)
            return 2
    sys.setswitchinterval(50e-6)
    todo, done = queue.Queue(maxsize=256), queue.Queue()

    def worker():
        total = 0
        while True:
            x = todo.get()
            if x is None:
                break
            total = (total + work(x, a.work)) & 0xFFFFFFFFFFFFFFFF
        done.put(total)

    ts = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in ts:
        t.start()
    for i in range(a.items):
        todo.put(i)
    for _ in ts:
        todo.put(None)
    for t in ts:
        t.join()
    checksum = 0
    while not done.empty():
        checksum = (checksum + done.get()) & 0xFFFFFFFFFFFFFFFF
    print(f"py-threads: threads={a.threads} items={a.items} checksum={checksum:#018x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
