#!/usr/bin/env bash
cd "$(dirname "$0")/../../.."
B="env LOCKLAB_BENCH=$PWD/build-ab/locklab-bench .venv/bin/locklab bench mutex --lock lk_mutex_v_base,lk_mutex_v_wakebit,rust_parking_lot,rust_std --duration 0.3 --warmup 0.05 --repeat 7 --baseline lk_mutex_v_base --no-progress"
cat /proc/loadavg > docs/results/mutex-wakebit-2core/ab1.load
$B --threads 8,16,64 --cs-ns 100 --parallel-ratio 1,10 --out docs/results/mutex-wakebit-2core/ab1a.json > docs/results/mutex-wakebit-2core/ab1a.txt 2>&1
$B --threads 2,3,4 --cs-ns 1 --parallel-ratio 0,10 --out docs/results/mutex-wakebit-2core/ab1b.json > docs/results/mutex-wakebit-2core/ab1b.txt 2>&1
$B --threads 8,32,256 --cs-ns 2000 --parallel-ratio 0,1 --out docs/results/mutex-wakebit-2core/ab1c.json > docs/results/mutex-wakebit-2core/ab1c.txt 2>&1
$B --threads 32,64,256 --cs-ns 1 --parallel-ratio 0,100 --out docs/results/mutex-wakebit-2core/ab1d.json > docs/results/mutex-wakebit-2core/ab1d.txt 2>&1
cat /proc/loadavg >> docs/results/mutex-wakebit-2core/ab1.load
echo done >> docs/results/mutex-wakebit-2core/ab1.load
