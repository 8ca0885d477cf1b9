/* SPDX-License-Identifier: MIT */
/*
 * locklab/relax.h - lk_cpu_relax(): what a spinning CPU does between two reads of a lock word.
 *
 * The meaning of cpu_relax() differs per CPU (seed 002): on x86 `pause` de-pipelines the spin loop and
 * yields the core to its SMT sibling (~10 ns on older parts, ~140 cycles on Skylake and later); on arm64
 * `yield` is a hint most cores treat as a nop, while `isb` really stalls for a short, bounded time;
 * everywhere else a compiler barrier is all we can portably do.
 *
 * arm64 choice: `isb` by default. `yield` is a nop on Neoverse/ThunderX2 class cores, so a spin loop built
 * on it hammers the cache line exactly as an empty loop does (the seed-002 lockref collapse); `isb` gives
 * a bounded back-off of tens of cycles, the choice Rust's std::hint::spin_loop and several JVMs made.
 * Build with -DLK_RELAX_ARM64_YIELD to get `yield` instead.
 */
#ifndef LOCKLAB_RELAX_H
#define LOCKLAB_RELAX_H

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

#endif /* LOCKLAB_RELAX_H */
