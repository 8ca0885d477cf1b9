/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_two_cpus.c - test_hook_mutex_one_cpu.c's steps pinned to two CPUs
 * (skipped with fewer): spinning as usual, and no unlock yields (mutex.yield_woken never fires).
 */
#define HK_CPUS 2
#define HK_NAME "test_hook_mutex_two_cpus"
#include "test_hook_mutex_one_cpu.c"
