/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_layouts.c - every registered bucket layout (registry family `layout`) is a
 * complete, independent parking lot: the same contract checks on each (invalid/timeout, FIFO
 * unpark with tokens, requeue counts, filter, growth), the documented bytes per bucket, and the
 * four futex workloads of locklab-bench on each layout and the kernel (exit 0, the fields the
 * docs quote present; bad input exits 2).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include "lab_park.h"
#include "lktest.h"

static const struct lab_layout_ops *L;
static _Atomic uint32_t wa, wb;
static _Atomic int nparked;

static void bs(void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&nparked, 1, memory_order_release);	/* release: test handshake */
}

static const struct lk_park_ops bs_ops = { .before_sleep = bs };

struct w {
	pthread_t th;
	const void *addr;
	lk_token_t tok;
	int ret;
};

static void *wmain(void *arg)
{
	struct w *w = arg;

	w->ret = L->park(w->addr, &bs_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &w->tok);
	return NULL;
}

static lk_token_t ctx_tok(void *ctx, struct lk_unpark_result r)
{
	(void)r;
	return (lk_token_t)(uintptr_t)ctx;
}

static enum lk_requeue_op rq_rest(void *ctx)
{
	(void)ctx;
	return LK_REQUEUE_UNPARK_ONE_REQUEUE_REST;
}

static enum lk_filter_op first_only(void *ctx, lk_token_t t)
{
	int *n = ctx;

	(void)t;
	return (*n)++ == 0 ? LK_FILTER_UNPARK : LK_FILTER_STOP;
}

static void start(struct w *w, int n, const void *addr)
{
	atomic_store_explicit(&nparked, 0, memory_order_relaxed);
	for (int i = 0; i < n; i++) {
		w[i] = (struct w){ .addr = addr };
		pthread_create(&w[i].th, NULL, wmain, &w[i]);
		while (atomic_load_explicit(&nparked, memory_order_acquire) < i + 1)	/* acquire: handshake */
			sched_yield();
	}
}

static void check_layout(const struct lab_alg *a)
{
	struct lk_park_stats st;
	struct timespec past = { 0, 0 };
	struct w w[4];
	int n = 0;

	L = a->ops;
	CHECK(strcmp(L->name, a->name) == 0);
	CHECK_EQ(L->park(NULL, NULL, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), -EINVAL);
	CHECK_EQ(L->park(&wa, NULL, NULL, 0, &past, CLOCK_REALTIME, NULL), LK_PARK_TIMEDOUT);

	start(w, 4, &wa);
	CHECK_EQ(L->unpark_one(&wa, ctx_tok, (void *)11), 1);
	pthread_join(w[0].th, NULL);
	CHECK_EQ(w[0].ret, LK_PARK_UNPARKED);
	CHECK_EQ(w[0].tok, 11);					/* FIFO: the first one */
	CHECK_EQ(L->unpark_requeue(&wa, &wb, rq_rest, NULL, NULL), 3);	/* 1 unparked + 2 requeued */
	pthread_join(w[1].th, NULL);
	CHECK_EQ(L->unpark_filter(&wb, first_only, ctx_tok, &n), 1);
	pthread_join(w[2].th, NULL);
	CHECK_EQ(L->unpark_all(&wb, 0), 1);
	pthread_join(w[3].th, NULL);
	CHECK_EQ(L->unpark_all(&wa, 0), 0);

	CHECK_EQ(L->reserve(1024), 0);
	L->get_stats(&st);
	CHECK(st.buckets >= 1024);
	CHECK(st.resizes >= 2);
	CHECK(st.retired_bytes < st.table_bytes);
	CHECK(strcmp(st.layout, strcmp(a->name, "lk_park") == 0 ? "lean" : a->name) == 0);
	CHECK_EQ(st.bucket_bytes, strcmp(st.layout, "split") == 0 ? 128 : 64);
	printf("%-8s %3zu B/bucket, %zu buckets, table %zu B\n", a->name, st.bucket_bytes, st.buckets,
	       st.table_bytes);
}

/* Runs locklab-bench with args; returns its exit status; *out gets (a prefix of) its stdout. */
static int bench(const char *args, char *out, size_t len)
{
	const char *b = getenv("LOCKLAB_BENCH");
	char cmd[512];
	size_t got = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", b, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (got < len - 1) {
		size_t r = fread(out + got, 1, len - 1 - got, f);

		if (!r)
			break;
		got += r;
	}
	out[got] = 0;
	while (fgetc(f) != EOF) {
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_workloads(void)
{
	static const char *locks[] = { "kernel", "packed", "split", "lean" };
	static char out[1 << 16];

	if (!getenv("LOCKLAB_BENCH")) {
		printf("LOCKLAB_BENCH not set: workload checks skipped\n");
		return;
	}
	for (unsigned i = 0; i < 4; i++) {
		char args[256];

		snprintf(args, sizeof(args), "futex-hash --lock %s --threads 2 --futexes 64 --duration 0.05 --warmup 0",
			 locks[i]);
		CHECK_EQ(bench(args, out, sizeof(out)), 0);
		CHECK(strstr(out, "\"buckets_in_force\":") != NULL);
		CHECK(strstr(out, "\"unexpected_returns\":0") != NULL);
		snprintf(args, sizeof(args), "futex-wake --lock %s --waiters 4 --nwake 0 --rounds 3", locks[i]);
		CHECK_EQ(bench(args, out, sizeof(out)), 0);
		CHECK(strstr(out, "\"wake_all_ns\":") != NULL);
		snprintf(args, sizeof(args), "wake-parallel --lock %s --waiters 4 --wakers 2 --rounds 2", locks[i]);
		CHECK_EQ(bench(args, out, sizeof(out)), 0);
		snprintf(args, sizeof(args), "requeue --lock %s --waiters 4 --nrequeue 1 --rounds 2", locks[i]);
		CHECK_EQ(bench(args, out, sizeof(out)), 0);
		CHECK(strstr(out, "\"requeued_exactly\":true") != NULL);
	}
	CHECK_EQ(bench("futex-hash --lock kernel --buckets 256 --duration 0.05 --warmup 0", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"buckets_in_force\":256") != NULL || strstr(out, "kernel-default") != NULL);
	CHECK_EQ(bench("futex-hash --lock lean --buckets 256 --duration 0.05 --warmup 0", out, sizeof(out)), 0);
	CHECK(strstr(out, "\"buckets_in_force\":256") != NULL);
	CHECK_EQ(bench("futex-hash --lock nope", out, sizeof(out)), 2);
	CHECK_EQ(bench("futex-hash --buckets 100", out, sizeof(out)), 2);
	CHECK_EQ(bench("futex-hash --lock lean --buckets global", out, sizeof(out)), 2);
	CHECK_EQ(bench("wake-parallel --waiters 10 --wakers 3", out, sizeof(out)), 2);
	CHECK_EQ(bench("requeue --lock split --nrequeue 2", out, sizeof(out)), 2);
}

int main(void)
{
	unsigned found = 0;

	lkt_watchdog(120);
	for (size_t i = 0; i < lab_registry_len; i++) {
		const struct lab_alg *a = &lab_registry[i];

		if (strcmp(a->family, "layout") != 0)
			continue;
		CHECK(a->ops != NULL);
		CHECK(strcmp(a->opstype, "layout") == 0);
		if (a->ops) {
			check_layout(a);
			found++;
		}
	}
	CHECK(found >= 3);
	check_workloads();
	return lkt_done("test_park_layouts");
}
