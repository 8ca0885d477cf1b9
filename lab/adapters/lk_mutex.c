/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/lk_mutex.c - lk_mutex (include/locklab/mutex.h) as a lab `lock`.
 *
 * State: one lk_mutex_t (4 bytes) at the start of the lab's cache-line aligned block.
 *
 * Tuning sweeps without rebuilding: the first init reads these environment variables and, when any
 * is set, applies them with lk_mutex_set_policy() (process-wide; unset ones keep their defaults):
 *
 *	LOCKLAB_MUTEX_SPIN_MIN_NS  LOCKLAB_MUTEX_SPIN_MAX_NS  LOCKLAB_MUTEX_HANDOFF_NS
 *
 * and LOCKLAB_MUTEX_ASK (0 or 1: lk_mutex_set_ask(), the spinner's ask; off by default).
 *
 * A value that is not a number, or a policy lk_mutex_set_policy() rejects, makes init fail with
 * EINVAL after one line on stderr naming the variable.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "lab.h"
#include "locklab/mutex.h"

static int env_err;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static struct lk_mutex_policy env_policy;	/* the defaults with the environment's values applied */
static int env_ask;				/* LOCKLAB_MUTEX_ASK, or the library's default */

static int env_u64(const char *name, uint64_t *out)
{
	const char *s = getenv(name);
	char *end;

	if (!s)
		return 0;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "locklab-bench: %s: expected a non-negative integer, got '%s'\n", name, s);
		return EINVAL;
	}
	*out = v;
	return 0;
}

static void env_apply(void)
{
	struct lk_mutex_policy p;
	uint64_t min, max, handoff, ask;

	lk_mutex_get_policy(&p);
	ask = (uint64_t)lk_mutex_get_ask();
	if (env_u64("LOCKLAB_MUTEX_ASK", &ask)) {
		env_err = EINVAL;
		return;
	}
	if (ask > 1 || lk_mutex_set_ask((int)ask)) {
		fprintf(stderr, "locklab-bench: LOCKLAB_MUTEX_ASK: expected 0 or 1, got %llu\n",
			(unsigned long long)ask);
		env_err = EINVAL;
		return;
	}
	env_ask = (int)ask;
	env_policy = p;
	min = p.spin_min_ns;
	max = p.spin_max_ns;
	handoff = p.handoff_ns;
	if (env_u64("LOCKLAB_MUTEX_SPIN_MIN_NS", &min) || env_u64("LOCKLAB_MUTEX_SPIN_MAX_NS", &max) ||
	    env_u64("LOCKLAB_MUTEX_HANDOFF_NS", &handoff)) {
		env_err = EINVAL;
		return;
	}
	if (min > UINT32_MAX || max > UINT32_MAX) {
		fprintf(stderr, "locklab-bench: LOCKLAB_MUTEX_*: value out of range\n");
		env_err = EINVAL;
		return;
	}
	p.spin_min_ns = (uint32_t)min;
	p.spin_max_ns = (uint32_t)max;
	p.handoff_ns = handoff;
	env_policy = p;
	if (lk_mutex_set_policy(&p)) {
		fprintf(stderr, "locklab-bench: LOCKLAB_MUTEX_*: policy rejected (need spin_min <= spin_max "
				"<= %u ns, handoff <= %llu ns)\n",
			LK_MUTEX_SPIN_MAX_NS_LIMIT, LK_MUTEX_HANDOFF_NS_LIMIT);
		env_err = EINVAL;
	}
}

/*
 * For the tuning variants (lk_mutex_variant.h): the policy the environment asks for, checked; 0 or
 * EINVAL (after the one line on stderr).
 */
int lab_lk_mutex_env_policy(struct lk_mutex_policy *p)
{
	pthread_once(&env_once, env_apply);
	if (env_err)
		return env_err;
	*p = env_policy;
	return 0;
}

/* For the tuning variants: the ask switch the environment asks for (after lab_lk_mutex_env_policy). */
int lab_lk_mutex_env_ask(void)
{
	pthread_once(&env_once, env_apply);
	return env_ask;
}

static int lkm_init(void *l)
{
	pthread_once(&env_once, env_apply);
	if (env_err)
		return env_err;
	return lk_mutex_init(l);
}

static void lkm_destroy(void *l)
{
	lk_mutex_destroy(l);
}

static void lkm_lock(void *l)
{
	lk_mutex_lock(l);
}

static int lkm_trylock(void *l)
{
	return lk_mutex_trylock(l);
}

static void lkm_unlock(void *l)
{
	lk_mutex_unlock(l);
}

const struct lab_lock_ops lab_lk_mutex_ops = {
	.size = sizeof(lk_mutex_t),
	.init = lkm_init,
	.destroy = lkm_destroy,
	.lock = lkm_lock,
	.trylock = lkm_trylock,
	.unlock = lkm_unlock,
	.flags = LAB_LOCK_STATS,	/* slow-path events in a statistics build (src/lockstat.h) */
};
