/* pair3: NP "pair" threads lock/unlock m with a critical section of CS ns (busy loop; optionally
 * writing a counter on the lock's own cache line) and OUT ns outside. One optional third thread:
 *   mode try:   polls lk_mutex_trylock every GAP ns; reports successes and its longest gap
 *   mode lock:  every GAP ns calls lk_mutex_lock; reports its acquisition latency (p50/p99/max)
 *   mode timed: every GAP ns calls lk_mutex_timedlock with a DL ns deadline; reports timeouts
 * usage: pair3 NP CS OUT MODE GAP [DL] [secs] [handoff_ns] [sameline]
 */
#include "common.h"
struct { lk_mutex_t m; uint32_t pad; volatile uint64_t data; } __attribute__((aligned(64))) L_;
#define m (L_.m)
static volatile uint64_t far_data[8] __attribute__((aligned(64)));
static _Atomic int stop, inside;
static uint64_t CS, OUT, GAP, DL; static int sameline, NP;
static uint64_t ops[16]; static uint64_t pair_lat_max[16]; static uint64_t long_waits[16], total_long_ns[16];
static _Atomic uint64_t excl_err;
static void busy(uint64_t ns, int write)
{
	uint64_t t0 = now_ns();
	while (now_ns() - t0 < ns) {
		if (write == 1) L_.data++; else if (write == 2) far_data[0]++;
	}
}
static void *pair(void *a)
{
	int id = (int)(intptr_t)a; uint64_t n = 0;
	if (getenv("PIN")) pin(getenv("PIN")[0] == 's' ? 0 : id % 2);
	if (getenv("IDLE1") && id == 1) { struct sched_param sp = { 0 }; if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)) perror("SCHED_IDLE"); }
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t t0 = now_ns();
		lk_mutex_lock(&m);
		uint64_t d = now_ns() - t0; if (d > pair_lat_max[id]) pair_lat_max[id] = d;
		if (d > 100000) { long_waits[id]++; total_long_ns[id] += d; }
		if (atomic_fetch_add_explicit(&inside, 1, memory_order_relaxed)) atomic_fetch_add(&excl_err, 1);
		busy(CS, sameline ? 1 : 2);
		atomic_fetch_sub_explicit(&inside, 1, memory_order_relaxed);
		lk_mutex_unlock(&m); n++;
		if (OUT) busy(OUT, 0);
	}
	ops[id] = n; stats_collect(); return NULL;
}
static char *MODE;
static uint64_t lat[1 << 20]; static size_t nlat; static uint64_t t_wins, t_tries, t_maxgap, t_timeouts;
static void *third(void *a)
{
	(void)a; uint64_t last = now_ns();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t t0 = now_ns(); int r;
		if (!strcmp(MODE, "try")) {
			t_tries++;
			r = lk_mutex_trylock(&m);
		} else if (!strcmp(MODE, "lock")) {
			lk_mutex_lock(&m); r = 0;
		} else {
			struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t d = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec + DL;
			ts.tv_sec = d / 1000000000ull; ts.tv_nsec = d % 1000000000ull;
			r = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts);
			if (r == ETIMEDOUT) t_timeouts++;
		}
		uint64_t t1 = now_ns();
		if (r == 0) {
			if (atomic_fetch_add_explicit(&inside, 1, memory_order_relaxed)) atomic_fetch_add(&excl_err, 1);
			atomic_fetch_sub_explicit(&inside, 1, memory_order_relaxed);
			lk_mutex_unlock(&m); t_wins++;
			if (nlat < (1 << 20)) lat[nlat++] = t1 - t0;
			if (t1 - last > t_maxgap) t_maxgap = t1 - last;
			last = t1;
		}
		if (getenv("SLEEPGAP")) { struct timespec z = { 0, (long)GAP }; nanosleep(&z, NULL); } else busy(GAP, 0);
	}
	uint64_t t = now_ns(); if (t - last > t_maxgap) t_maxgap = t - last;
	stats_collect(); return NULL;
}
int main(int argc, char **argv)
{
	if (getenv("ASK") && lk_mutex_set_ask(atoi(getenv("ASK")))) { fprintf(stderr, "ASK: 0 or 1\n"); return 2; }
	if (argc < 6) { fprintf(stderr, "usage\n"); return 2; }
	NP = atoi(argv[1]); CS = atoll(argv[2]); OUT = atoll(argv[3]); MODE = argv[4]; GAP = atoll(argv[5]);
	DL = argc > 6 ? atoll(argv[6]) : 0;
	double secs = argc > 7 ? atof(argv[7]) : 2;
	if (argc > 8 && atoll(argv[8])) {
		struct lk_mutex_policy p; lk_mutex_get_policy(&p); p.handoff_ns = atoll(argv[8]); lk_mutex_set_policy(&p);
	}
	sameline = argc > 9 ? atoi(argv[9]) : 0;
	pthread_t t[17];
	uint64_t c0 = cpu_ns(), w0 = now_ns();
	for (int i = 0; i < NP; i++) pthread_create(&t[i], NULL, pair, (void *)(intptr_t)i);
	usleep(100000);
	int has3 = strcmp(MODE, "none") != 0;
	if (has3) pthread_create(&t[NP], NULL, third, NULL);
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop, 1);
	for (int i = 0; i < NP + has3; i++) pthread_join(t[i], NULL);
	double wall = (now_ns() - w0) / 1e9, cpu = (cpu_ns() - c0) / 1e9;
	uint64_t tot = 0, lmax = 0; for (int i = 0; i < NP; i++) { tot += ops[i]; if (pair_lat_max[i] > lmax) lmax = pair_lat_max[i]; }
	printf("pair: %.3f Mops/s cpu/op %.0f ns  pair max wait %.2f ms  excl_err=%lu\n", tot / wall / 1e6, cpu * 1e9 / (tot + t_wins), lmax / 1e6, (unsigned long)excl_err);
	for (int i = 0; i < NP; i++) printf("  pair thread %d: ops %lu, waits > 100 us: %lu totalling %.1f ms, max %.2f ms\n", i, (unsigned long)ops[i], (unsigned long)long_waits[i], total_long_ns[i] / 1e6, pair_lat_max[i] / 1e6);
	if (has3) {
		qsort(lat, nlat, sizeof(lat[0]), cmp_u64);
		printf("third(%s): wins=%lu", MODE, (unsigned long)t_wins);
		if (!strcmp(MODE, "try")) printf(" tries=%lu (%.3f%%)", (unsigned long)t_tries, 100.0 * t_wins / (t_tries ? t_tries : 1));
		if (!strcmp(MODE, "timed")) printf(" timeouts=%lu", (unsigned long)t_timeouts);
		if (nlat) printf(" lat p50=%.1fus p99=%.1fus max=%.1fus", lat[nlat / 2] / 1e3, lat[nlat * 99 / 100] / 1e3, lat[nlat - 1] / 1e3);
		printf(" longest gap between wins=%.2f ms\n", t_maxgap / 1e6);
	}
	stats_print();
	return excl_err != 0;
}
