/* SPDX-License-Identifier: MIT */
/*
 * locklab/relax.h - lk_cpu_relax(): what a spinning CPU does between two reads of a lock word, and
 * lk_spin_wait(): the one spin-wait step every locklab spinlock uses.
 *
 * The meaning of cpu_relax() differs per CPU (seed 002):
 *
 *   x86      `pause`: de-pipelines the spin loop (no memory-order mis-speculation flush when the line
 *            finally changes) and hands the core's resources to the SMT sibling. ~10 ns on older
 *            parts, ~140 cycles on Skylake-SP and later, ~40 cycles on Zen. The delay is what made
 *            the unbounded lockref cmpxchg loop behave on x86 (Jan Glauber, seed 002).
 *   arm64    `yield`: architecturally a hint. The arm64 kernel's cpu_relax() is `yield` and Will
 *            Deacon explains in seed 002 that it is there *only* as a scheduling hint for QEMU; on
 *            ThunderX2 (and, as far as is documented, Neoverse N1/V1 and Graviton) it retires as a
 *            NOP, so a loop built on it hammers the line exactly like an empty loop.
 *            `isb`: flushes the pipeline and waits for it to refill - a real, bounded stall of a
 *            few tens of cycles (implementation-defined; not an architectural guarantee). Rust's
 *            core::hint::spin_loop() emits `isb` on aarch64 for this reason, and OpenJDK offers
 *            -XX:OnSpinWaitInst=isb for Neoverse.
 *            `wfe` would be best for "wait until this line changes" (the kernel's
 *            smp_cond_load_acquire) but needs an exclusive monitor armed on the word and may sleep
 *            until the next event; it does not fit a generic relax() and is not used here.
 *            Our choice: `isb` by default, because the seed-002 collapse is precisely a spinning
 *            CPU that does not back off; -DLK_RELAX_ARM64_YIELD restores the kernel's `yield` so the
 *            two can be compared on the same machine (the lab reports which one was built:
 *            LK_RELAX_NAME appears in every run's machine description).
 *   ppc64    `or 1,1,1; or 2,2,2`: drop SMT priority, then restore it (the kernel's HMT_low/medium).
 *   riscv    Zihintpause `pause`, encoded as a FENCE hint so cores without the extension run a nop.
 *   other    a compiler barrier only.
 *
 * Note for CAS loops (lockref): a failed compare-exchange already returns the fresh value, so relaxing
 * between attempts only lets the line leave the CPU that just fetched it (Linus and Jayachandran in
 * seed 002). locklab's lockref therefore does not relax inside its cmpxchg loop; relax is for loops
 * that *wait* for another CPU to change a word.
 *
 * Userspace caveat: a spinning thread cannot see whether the lock holder (or, for FIFO locks, the next
 * in line) has been preempted. lk_spin_wait() relaxes, and after LK_SPIN_YIELD_AFTER consecutive
 * relaxes without progress calls sched_yield() once so that an oversubscribed machine (more spinners
 * than CPUs) hands the CPU to the thread everybody waits for instead of burning a whole time slice.
 * It changes nothing while the wait is short (the common case a spinlock is designed for).
 */
#ifndef LOCKLAB_RELAX_H
#define LOCKLAB_RELAX_H

#include <sched.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__) || defined(__i386__)
static inline void lk_cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
#define LK_RELAX_NAME "x86 pause"
#elif defined(__aarch64__) && defined(LK_RELAX_ARM64_YIELD)
static inline void lk_cpu_relax(void) { __asm__ __volatile__("yield" ::: "memory"); }
#define LK_RELAX_NAME "arm64 yield"
#elif defined(__aarch64__)
static inline void lk_cpu_relax(void) { __asm__ __volatile__("isb" ::: "memory"); }
#define LK_RELAX_NAME "arm64 isb"
#elif defined(__powerpc64__)
/* lower SMT priority, then back to medium: what the kernel's cpu_relax() does on POWER */
static inline void lk_cpu_relax(void) { __asm__ __volatile__("or 1,1,1\n\tor 2,2,2" ::: "memory"); }
#define LK_RELAX_NAME "ppc64 smt-low/medium"
#elif defined(__riscv)
/* Zihintpause `pause` is encoded as a FENCE hint; harmless on cores without the extension */
static inline void lk_cpu_relax(void) { __asm__ __volatile__(".insn i 0x0F, 0, x0, x0, 0x010" ::: "memory"); }
#define LK_RELAX_NAME "riscv pause"
#else
static inline void lk_cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
#define LK_RELAX_NAME "compiler barrier"
#endif

/* Consecutive relaxes without progress after which lk_spin_wait() yields the CPU once (~20-100 us). */
#define LK_SPIN_YIELD_AFTER 1024u

/*
 * One step of a spin-wait loop. `*spins` counts the steps of the current wait; the caller zeroes it
 * when the wait starts (and may zero it again whenever it observes progress).
 */
static inline void lk_spin_wait(unsigned *spins)
{
	if (++*spins < LK_SPIN_YIELD_AFTER) {
		lk_cpu_relax();
		return;
	}
	*spins = 0;
	sched_yield();
}

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_RELAX_H */
