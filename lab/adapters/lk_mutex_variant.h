/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/lk_mutex_variant.h - lk_mutex built a second time, with other compile-time knobs, as
 * its own lab lock: for A/B runs in ONE driver (`locklab bench mutex --lock lk_mutex,lk_mutex_v_...`
 * interleaves them cell by cell). Only in a build configured with -DLAB_MUTEX_VARIANTS (the entries
 * in lab/registry.def are guarded by it, so the suites' "+mutex" never picks them up):
 *
 *	cmake -S . -B build-ab -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS
 *
 * A variant file defines LKM_VARIANT (a name) and the knobs of src/mutex.c it changes (LKM_*), then
 * includes this header, which compiles src/mutex.c into this translation unit with every external
 * symbol renamed (its own policy, side table and fork generation; the parking lot is the library's)
 * and defines lab_lk_mutex_v_<LKM_VARIANT>_ops. The policy comes from the same environment
 * variables as lk_mutex's (lab/adapters/lk_mutex.c), and so does the spinner's ask switch
 * (LOCKLAB_MUTEX_ASK); a variant may define LKMV_SPIN_MIN_NS, its own
 * default for spin_min_ns, which LOCKLAB_MUTEX_SPIN_MIN_NS still overrides.
 */
#include "lk_mutex_renamed.h"

#include <stdlib.h>

#include "lab.h"

int lab_lk_mutex_env_policy(struct lk_mutex_policy *p);	/* lab/adapters/lk_mutex.c */
int lab_lk_mutex_env_ask(void);					/* lab/adapters/lk_mutex.c */

static int lkmv_init(void *l)
{
	struct lk_mutex_policy p;
	int e = lab_lk_mutex_env_policy(&p);

	if (e)
		return e;
#ifdef LKMV_SPIN_MIN_NS
	if (!getenv("LOCKLAB_MUTEX_SPIN_MIN_NS")) {
		p.spin_min_ns = LKMV_SPIN_MIN_NS;
		if (p.spin_min_ns > p.spin_max_ns)
			p.spin_min_ns = p.spin_max_ns;
	}
#endif
	if (lk_mutex_set_policy(&p) || lk_mutex_set_ask(lab_lk_mutex_env_ask()))
		return EINVAL;
	return lk_mutex_init(l);
}

static void lkmv_destroy(void *l)
{
	lk_mutex_destroy(l);
}

static void lkmv_lock(void *l)
{
	lk_mutex_lock(l);
}

static int lkmv_trylock(void *l)
{
	return lk_mutex_trylock(l);
}

static void lkmv_unlock(void *l)
{
#if LKM_WAKE_MORE
	lkm_wm_unlock(l);
#else
	lk_mutex_unlock(l);
#endif
}

const struct lab_lock_ops LKMV_CAT(lab_lk_mutex_v_, LKM_VARIANT, _ops) = {
	.size = sizeof(lk_mutex_t),
	.init = lkmv_init,
	.destroy = lkmv_destroy,
	.lock = lkmv_lock,
	.trylock = lkmv_trylock,
	.unlock = lkmv_unlock,
	.flags = LAB_LOCK_STATS,
};
