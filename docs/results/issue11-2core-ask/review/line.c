/* line: 2 threads, each critical section does W read-modify-writes of a counter that sits either on
 * the lock word's cache line (same=1) or on a line of its own (same=0); reports ops/s and the mean
 * critical-section time (rdtsc-free: clock around the CS, sampled every 16th op).
 * usage: line W same secs */
#include "common.h"
static struct { lk_mutex_t m; uint32_t pad; volatile uint64_t data; } __attribute__((aligned(64))) L_;
static struct { volatile uint64_t data; } __attribute__((aligned(64))) far_;
static _Atomic int stop; static uint64_t W; static int same;
static uint64_t ops[2], cs_ns[2], cs_n[2];
static void *thr(void *a)
{
	int id = (int)(intptr_t)a; uint64_t n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lk_mutex_lock(&L_.m);
		int samp = (n & 15) == 0; uint64_t t0 = samp ? now_ns() : 0;
		if (same) for (uint64_t i = 0; i < W; i++) L_.data++;
		else for (uint64_t i = 0; i < W; i++) far_.data++;
		if (samp) { cs_ns[id] += now_ns() - t0; cs_n[id]++; }
		lk_mutex_unlock(&L_.m); n++;
	}
	ops[id] = n; stats_collect(); return NULL;
}
int main(int argc, char **argv)
{
	if (getenv("ASK") && lk_mutex_set_ask(atoi(getenv("ASK")))) { fprintf(stderr, "ASK: 0 or 1\n"); return 2; }
	if (argc < 4) { fprintf(stderr, "usage: line W same secs\n"); return 2; }
	W = atoll(argv[1]); same = atoi(argv[2]); double secs = atof(argv[3]);
	pthread_t t[2]; uint64_t c0 = cpu_ns(), w0 = now_ns();
	for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, thr, (void *)(intptr_t)i);
	usleep((useconds_t)(secs * 1e6)); atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
	double wall = (now_ns() - w0) / 1e9; uint64_t tot = ops[0] + ops[1];
	printf("W=%lu %s-line: %.3f Mops/s  cpu/op %.0f ns  mean CS %.0f ns  ops %lu/%lu\n", (unsigned long)W, same ? "same" : "own", tot / wall / 1e6,
	       (cpu_ns() - c0) / (double)tot, (double)(cs_ns[0] + cs_ns[1]) / (cs_n[0] + cs_n[1]), (unsigned long)ops[0], (unsigned long)ops[1]);
	stats_print();
	return 0;
}
