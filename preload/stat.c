/* SPDX-License-Identifier: MIT */
/*
 * preload/stat.c - the lock profile of liblocklab-preload.so (LOCKLAB_STAT=1): the userspace
 * analogue of the kernel's /proc/lock_stat and of mutrace. docs/shim.md documents the JSON.
 *
 * WHAT IS RECORDED, per mutex and per condition variable (keyed by address and kind of object):
 *   mutex    acquisitions (lock/trylock/timedlock calls that got it), contended (the first attempt
 *            failed), wait time (total, max), hold time (total, max, a histogram for p50/p99),
 *            recursive relocks, trylocks that found it held, timedlock timeouts, misuse
 *            (SHIM_MISUSE_LIST in shim.h), inits and destroys
 *   condvar  waits, timeouts, wait time (total, max), signals, broadcasts, and the signals and
 *            broadcasts that found no waiter
 *   both     the call site (a return address in the program) of the init call, or of the first use
 *            when the object was statically initialised; symbolized at exit with dladdr, and to
 *            function and file:line by running addr2line on the object when it is installed
 *
 * TABLE. An open-addressing table of 2^18 slots (linear probing, at most 256 probes) holds pointers
 * to entries; entries come from an arena reserved with mmap (MAP_NORESERVE: only touched pages cost
 * memory) by an atomic bump index, so neither ever takes a lock or calls malloc (we run inside
 * pthread_mutex_lock, possibly inside malloc). Two threads that meet a new object at once both
 * allocate an entry; one CAS wins the slot, the loser marks its entry unused. Entries are never
 * removed: an address reused by a new object (after destroy, or free and malloc) accumulates into the
 * same entry ("inits" counts the initialisations). When the arena or the probe budget runs out the
 * object is not tracked and counted in "objects_dropped".
 *
 *	slot:  NULL --CAS (release)--> entry            entry: addr|type key, immutable once published
 *
 * COUNTERS are relaxed atomics: each is an independent statistic, read at exit. hold_start and depth
 * are written by the holder of the mutex only (under the lock being measured), relaxed because the
 * lock itself orders one holder's accesses before the next one's.
 *
 * HISTOGRAM of hold times: bucket 0 is [0, 16 ns); above that, four buckets per power of two
 * (HDR-style: 2 bits of mantissa), up to 2^36 ns (68 s), the last bucket taking everything longer.
 * A percentile is reported as the upper bound of the bucket it falls in (at most 25% high), capped at
 * the exact maximum.
 *
 * OUTPUT at exit (destructor): LOCKLAB_STAT_FILE (default "locklab-stat.%p.json"), "%p" replaced by
 * the process id, written to a temporary name and renamed. Without "%p", the first process that ran
 * under the profile (and any program it execs: LOCKLAB_STAT_ROOT in the environment tells them
 * apart) writes the file itself; other processes (children) write FILE.<pid>, and only when they
 * used a lock. A child forked without exec starts a fresh profile at fork.
 *
 * COST when on: two clock_gettime (vDSO) and a table lookup per lock/unlock pair, plus a trylock
 * before each lock to classify it; every call leaves the shim's fast path. When off: nothing but the
 * fast path's single branch (shim.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim.h"

#define HIST_N		129
#define SLOT_BITS	18
#define MAX_ENTRIES	(1u << 17)
#define MAX_PROBE	256
#define DEFAULT_MAX_LISTED 500

struct shim_stat {
	uintptr_t key;			/* address | type; immutable once published */
	int32_t kind;			/* mutex __kind / condvar __wrefs when created */
	uint8_t site_how;		/* enum shim_site */
	bool unused;			/* lost the race for its slot */
	_Atomic(void *) site;		/* set once (first non-NULL wins) */
	_Atomic uint64_t inits, destroys;
	_Atomic uint64_t acq, contended, recursive, trylock_busy, timeouts;
	_Atomic uint64_t wait_total, wait_max, hold_total, hold_max, holds;
	_Atomic uint64_t waits, wait_timeouts, cwait_total, cwait_max, signals, broadcasts, idle_wakes;
	_Atomic uint32_t misuse[SHIM_MISUSE_N];
	_Atomic uint64_t hold_start;	/* holder-only */
	_Atomic int32_t depth;		/* holder-only: acquisitions not yet released */
	_Atomic uint32_t hist[HIST_N];
};

static _Atomic(struct shim_stat *) *slots;
static struct shim_stat *arena;
static _Atomic uint32_t arena_used;
static _Atomic uint64_t dropped;
static uint64_t started_ns;
static pid_t root_pid;
static bool is_root;
static char out_path[PATH_MAX];
static const char *stat_lock_name;

static const char *const misuse_names[] = {
#define X(name) #name,
	SHIM_MISUSE_LIST(X)
#undef X
};

/* ---- table ------------------------------------------------------------------------------------------ */

static void *map_zeroed(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int table_setup(void)
{
	slots = map_zeroed(sizeof(*slots) << SLOT_BITS);
	arena = map_zeroed(sizeof(*arena) * (size_t)MAX_ENTRIES);
	if (!slots || !arena) {
		shim_say("LOCKLAB_STAT: cannot reserve memory for the profile table");
		return 1;
	}
	atomic_store_explicit(&arena_used, 0, memory_order_relaxed);
	atomic_store_explicit(&dropped, 0, memory_order_relaxed);
	return 0;
}

static inline size_t slot_of(uintptr_t key)
{
	return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> (64 - SLOT_BITS));
}

static void set_site(struct shim_stat *e, void *site)
{
	void *none = NULL;

	/* relaxed: a plain record; the first site written wins */
	if (site && !atomic_load_explicit(&e->site, memory_order_relaxed))
		atomic_compare_exchange_strong_explicit(&e->site, &none, site, memory_order_relaxed,
							memory_order_relaxed);
}

static struct shim_stat *entry_new(uintptr_t key, int kind, void *site, enum shim_site how)
{
	/* relaxed: a unique index is all we need; the entry is published by the slot CAS */
	uint32_t i = atomic_fetch_add_explicit(&arena_used, 1, memory_order_relaxed);

	if (i >= MAX_ENTRIES)
		return NULL;
	struct shim_stat *e = &arena[i];
	e->key = key;
	e->kind = kind;
	e->site_how = (uint8_t)how;
	atomic_store_explicit(&e->site, site, memory_order_relaxed);
	return e;
}

struct shim_stat *shim_stat_get(const void *obj, enum shim_obj type, int kind, void *site, enum shim_site how)
{
	uintptr_t key = (uintptr_t)obj | (uintptr_t)type;
	struct shim_stat *mine = NULL;
	size_t h = slot_of(key), mask = ((size_t)1 << SLOT_BITS) - 1;

	if (!slots)
		return NULL;
	for (unsigned probe = 0; probe < MAX_PROBE; probe++, h = (h + 1) & mask) {
		/* acquire: pairs with the release CAS that published the entry (its key and kind) */
		struct shim_stat *p = atomic_load_explicit(&slots[h], memory_order_acquire);

		if (!p) {
			if (!mine) {
				mine = entry_new(key, kind, site, how);
				if (!mine)
					break;
			}
			/* release: publishes mine's key; acquire on failure: we read the winner's key */
			if (atomic_compare_exchange_strong_explicit(&slots[h], &p, mine, memory_order_release,
								    memory_order_acquire))
				return mine;
		}
		if (p->key == key) {
			if (mine)
				mine->unused = true;	/* never published */
			set_site(p, site);
			return p;
		}
	}
	if (mine)
		mine->unused = true;
	/* relaxed: a statistic */
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	return NULL;
}

/* ---- recording ---------------------------------------------------------------------------------- */

#define ADD(field, v) atomic_fetch_add_explicit(&(field), (v), memory_order_relaxed)

static void max_into(_Atomic uint64_t *m, uint64_t v)
{
	/* relaxed: a statistic; the CAS loop only keeps the largest value */
	uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);

	while (v > cur && !atomic_compare_exchange_weak_explicit(m, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

static unsigned hist_bucket(uint64_t ns)
{
	if (ns < 16)
		return 0;
	unsigned o = 63u - (unsigned)__builtin_clzll(ns);	/* >= 4 */
	unsigned b = 1 + (o - 4) * 4 + (unsigned)((ns >> (o - 2)) & 3);

	return b < HIST_N ? b : HIST_N - 1;
}

/* [lo, hi) of bucket b in ns (hi of the last bucket: UINT64_MAX). */
static void hist_bounds(unsigned b, uint64_t *lo, uint64_t *hi)
{
	if (b == 0) {
		*lo = 0;
		*hi = 16;
		return;
	}
	unsigned o = 4 + (b - 1) / 4, sub = (b - 1) % 4;
	*lo = (uint64_t)(4 + sub) << (o - 2);
	*hi = b == HIST_N - 1 ? UINT64_MAX : (uint64_t)(5 + sub) << (o - 2);
}

void shim_stat_inited(const void *obj, enum shim_obj type, int kind, void *site)
{
	struct shim_stat *e = shim_stat_get(obj, type, kind, site, SHIM_SITE_INIT);

	if (e)
		ADD(e->inits, 1);
}

void shim_stat_destroyed(struct shim_stat *e)
{
	if (e)
		ADD(e->destroys, 1);
}

void shim_stat_acquired(struct shim_stat *e, bool contended, uint64_t wait_ns)
{
	if (!e)
		return;
	ADD(e->acq, 1);
	if (contended) {
		ADD(e->contended, 1);
		ADD(e->wait_total, wait_ns);
		max_into(&e->wait_max, wait_ns);
	}
	/* relaxed (both): holder-only fields, ordered by the lock being measured */
	int32_t d = atomic_load_explicit(&e->depth, memory_order_relaxed);
	if (d <= 0) {
		d = 0;
		atomic_store_explicit(&e->hold_start, shim_now_ns(), memory_order_relaxed);
	}
	atomic_store_explicit(&e->depth, d + 1, memory_order_relaxed);
}

void shim_stat_recursive(struct shim_stat *e)
{
	if (e)
		ADD(e->recursive, 1);
}

void shim_stat_trylock_busy(struct shim_stat *e)
{
	if (e)
		ADD(e->trylock_busy, 1);
}

void shim_stat_timedout(struct shim_stat *e, uint64_t wait_ns)
{
	if (!e)
		return;
	ADD(e->timeouts, 1);
	ADD(e->wait_total, wait_ns);
	max_into(&e->wait_max, wait_ns);
}

void shim_stat_released(struct shim_stat *e)
{
	if (!e)
		return;
	/* relaxed (both): holder-only fields, see shim_stat_acquired */
	int32_t d = atomic_load_explicit(&e->depth, memory_order_relaxed);
	if (d <= 0)
		return;		/* acquired before the profile could see it (e.g. before fork) */
	atomic_store_explicit(&e->depth, d - 1, memory_order_relaxed);
	if (d != 1)
		return;
	uint64_t start = atomic_load_explicit(&e->hold_start, memory_order_relaxed);
	uint64_t now = shim_now_ns();
	uint64_t held = now > start ? now - start : 0;

	ADD(e->holds, 1);
	ADD(e->hold_total, held);
	max_into(&e->hold_max, held);
	ADD(e->hist[hist_bucket(held)], 1);
}

void shim_stat_misuse(struct shim_stat *e, enum shim_misuse what)
{
	if (e)
		ADD(e->misuse[what], 1);
}

void shim_stat_cond_waited(struct shim_stat *e, uint64_t wait_ns, bool timedout)
{
	if (!e)
		return;
	ADD(e->waits, 1);
	if (timedout)
		ADD(e->wait_timeouts, 1);
	ADD(e->cwait_total, wait_ns);
	max_into(&e->cwait_max, wait_ns);
}

void shim_stat_cond_signalled(struct shim_stat *e, bool broadcast, bool had_waiters)
{
	if (!e)
		return;
	if (broadcast)
		ADD(e->broadcasts, 1);
	else
		ADD(e->signals, 1);
	if (!had_waiters)
		ADD(e->idle_wakes, 1);
}

/* ---- set-up ----------------------------------------------------------------------------------------- */

static int resolve_path(const char *pattern)
{
	char pid[24], buf[PATH_MAX];
	size_t n = 0;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (pattern[0] != '/') {
		if (!getcwd(buf, sizeof(buf) - 1))
			return 1;
		n = strlen(buf);
		buf[n++] = '/';
	}
	for (const char *p = pattern; *p && n < sizeof(buf) - 24; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", pid);
			p++;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = 0;
	bool per_pid = strstr(pattern, "%p") != NULL;
	if (!per_pid && !is_root)
		snprintf(out_path, sizeof(out_path), "%s.%s", buf, pid);
	else
		snprintf(out_path, sizeof(out_path), "%s", buf);
	return 0;
}

static const char *file_pattern(void)
{
	const char *f = getenv("LOCKLAB_STAT_FILE");

	return f && *f ? f : "locklab-stat.%p.json";
}

int shim_stat_init(const char *lock_name)
{
	const char *v = getenv("LOCKLAB_STAT");

	stat_lock_name = lock_name;
	if (!v || !*v || strcmp(v, "0") == 0)
		return 0;
	if (strcmp(v, "1") != 0) {
		shim_say("LOCKLAB_STAT: expected 0 or 1, got '%s'", v);
		return 2;
	}
	/* the first process under the profile marks itself for the programs it execs and its children */
	const char *root = getenv("LOCKLAB_STAT_ROOT");
	pid_t self = getpid();
	if (!root || !*root) {
		char b[24];
		snprintf(b, sizeof(b), "%d", (int)self);
		setenv("LOCKLAB_STAT_ROOT", b, 1);
		root_pid = self;
	} else {
		root_pid = (pid_t)atoi(root);
	}
	is_root = root_pid == self;
	if (resolve_path(file_pattern()) || table_setup())
		return 2;
	started_ns = shim_now_ns();
	shim_stat_on = true;
	return 0;
}

void shim_stat_fork_child(void)
{
	/* the only thread of the child: nothing else touches the table */
	if (slots)
		munmap(slots, sizeof(*slots) << SLOT_BITS);
	if (arena)
		munmap(arena, sizeof(*arena) * (size_t)MAX_ENTRIES);
	slots = NULL;
	arena = NULL;
	is_root = false;
	if (resolve_path(file_pattern()) || table_setup()) {
		slots = NULL;	/* no profile in this child: every lookup returns NULL */
		return;
	}
	started_ns = shim_now_ns();
}

/* ---- output ----------------------------------------------------------------------------------------- */

#define MAX_FRAMES 8

struct frame {
	char *function;
	char *file;
	long line;
};

struct site_info {
	void *addr;
	const char *object;	/* path */
	const char *symbol;	/* dynamic symbol (dladdr), may be NULL */
	uintptr_t sym_off;
	uintptr_t rel;		/* link-time address, for addr2line */
	struct frame fr[MAX_FRAMES];	/* from addr2line -i: innermost inlined frame first */
	int nfr;
	int pick;		/* the frame reported as function/file/line */
};

/* The frame to report: the innermost one that is not in a system header (libstdc++'s
 * std::mutex::lock inlined into the caller says little), else the innermost. */
static void pick_frame(struct site_info *s)
{
	s->pick = 0;
	for (int i = 0; i < s->nfr; i++) {
		if (s->fr[i].file && strncmp(s->fr[i].file, "/usr/include/", 13) != 0 &&
		    strncmp(s->fr[i].file, "/usr/lib/gcc/", 13) != 0) {
			s->pick = i;
			return;
		}
	}
}

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static char exe_path[PATH_MAX];

static const char *main_exe(void)
{
	if (!exe_path[0]) {
		ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
		exe_path[n > 0 ? n : 0] = 0;
	}
	return exe_path;
}

static void site_resolve(struct site_info *s)
{
	Dl_info info;
	struct link_map *lm = NULL;

	if (!s->addr || !dladdr1(s->addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
		return;
	s->object = info.dli_fname && info.dli_fname[0] ? info.dli_fname : main_exe();
	if (lm && (!lm->l_name || !lm->l_name[0]))
		s->object = main_exe();
	s->symbol = info.dli_sname;
	s->sym_off = info.dli_saddr ? (uintptr_t)s->addr - (uintptr_t)info.dli_saddr : 0;
	s->rel = (uintptr_t)s->addr - (lm ? lm->l_addr : 0);
}

/* The environment without the shim's variables, for addr2line. */
static char **clean_env(void)
{
	extern char **environ;
	size_t n = 0;

	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof(*env));
	size_t k = 0;
	for (size_t i = 0; env && i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "LOCKLAB_", 8) != 0)
			env[k++] = environ[i];
	return env;
}

/*
 * addr2line -a -i -f -C -e OBJECT ADDR... for every site in `obj`: per address, the address line,
 * then a function line and a file:line line per inlined frame (innermost first). A return address
 * points after the call; ADDR - 1 names the call's line.
 */
static void addr2line_object(const char *tool, struct site_info **v, size_t n, char **env)
{
	char **argv = calloc(n + 8, sizeof(*argv));
	char (*hex)[24] = calloc(n, sizeof(*hex));
	int pfd[2];
	pid_t pid;

	if (!argv || !hex || pipe(pfd) != 0) {
		free(argv);
		free(hex);
		return;
	}
	size_t a = 0;
	argv[a++] = (char *)tool;
	argv[a++] = "-a";
	argv[a++] = "-i";
	argv[a++] = "-f";
	argv[a++] = "-C";
	argv[a++] = "-e";
	argv[a++] = (char *)v[0]->object;
	for (size_t i = 0; i < n; i++) {
		snprintf(hex[i], sizeof(hex[i]), "0x%lx", (unsigned long)(v[i]->rel ? v[i]->rel - 1 : 0));
		argv[a++] = hex[i];
	}
	argv[a] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	int rc = posix_spawnp(&pid, tool, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc == 0) {
		FILE *f = fdopen(pfd[0], "r");
		char fn[4096], loc[PATH_MAX + 32];
		struct site_info *cur = NULL;
		size_t next = 0;
		/* "0x..." starts the next address's group; then function and file:line lines in pairs */
		while (f && fgets(fn, sizeof(fn), f)) {
			fn[strcspn(fn, "\n")] = 0;
			if (strncmp(fn, "0x", 2) == 0) {
				cur = next < n ? v[next++] : NULL;
				continue;
			}
			if (!fgets(loc, sizeof(loc), f))
				break;
			loc[strcspn(loc, "\n")] = 0;
			if (!cur || cur->nfr >= MAX_FRAMES)
				continue;
			struct frame *fr = &cur->fr[cur->nfr++];
			if (strcmp(fn, "??") != 0)
				fr->function = strdup(fn);
			char *colon = strrchr(loc, ':');
			if (colon && strncmp(loc, "??", 2) != 0) {
				long line = strtol(colon + 1, NULL, 10);
				*colon = 0;
				if (line > 0) {
					fr->file = strdup(loc);
					fr->line = line;
				}
			}
		}
		for (size_t i = 0; i < n; i++)
			pick_frame(v[i]);
		if (f)
			fclose(f);
		else
			close(pfd[0]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	} else {
		close(pfd[0]);
	}
	free(argv);
	free(hex);
}

static int by_object(const void *a, const void *b)
{
	const struct site_info *x = *(struct site_info *const *)a, *y = *(struct site_info *const *)b;

	return strcmp(x->object ? x->object : "", y->object ? y->object : "");
}

static void symbolize(struct site_info *s, size_t n)
{
	const char *tool = getenv("LOCKLAB_STAT_ADDR2LINE");
	struct site_info **v;
	char **env;

	for (size_t i = 0; i < n; i++)
		site_resolve(&s[i]);
	if (tool && (!*tool || strcmp(tool, "0") == 0))
		return;
	if (!tool)
		tool = "addr2line";
	v = calloc(n, sizeof(*v));
	env = clean_env();
	if (!v || !env)
		goto out;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i].object)
			v[k++] = &s[i];
	qsort(v, k, sizeof(*v), by_object);
	for (size_t i = 0; i < k;) {
		size_t j = i;
		while (j < k && strcmp(v[j]->object, v[i]->object) == 0)
			j++;
		addr2line_object(tool, v + i, j - i, env);
		i = j;
	}
out:
	free(v);
	free(env);
}

static void write_site(FILE *f, const struct shim_stat *e, const struct site_info *s)
{
	fputs("\"site\": {\"addr\": ", f);
	if (s && s->addr)
		fprintf(f, "\"%p\"", s->addr);
	else
		fputs("null", f);
	fprintf(f, ", \"how\": \"%s\", \"object\": ", e->site_how == SHIM_SITE_INIT ? "init" : "first-use");
	json_str(f, s ? s->object : NULL);
	fputs(", \"symbol\": ", f);
	json_str(f, s ? s->symbol : NULL);
	fprintf(f, ", \"offset\": %lu, ", s ? (unsigned long)s->sym_off : 0ul);
	const struct frame *p = s && s->nfr ? &s->fr[s->pick] : NULL;
	fputs("\"function\": ", f);
	json_str(f, p ? p->function : NULL);
	fputs(", \"file\": ", f);
	json_str(f, p ? p->file : NULL);
	if (p && p->line > 0)
		fprintf(f, ", \"line\": %ld", p->line);
	else
		fputs(", \"line\": null", f);
	fputs(", \"inlined\": [", f);
	for (int i = 0; s && i < s->nfr; i++) {
		fputs(i ? ", {\"function\": " : "{\"function\": ", f);
		json_str(f, s->fr[i].function);
		fputs(", \"file\": ", f);
		json_str(f, s->fr[i].file);
		if (s->fr[i].line > 0)
			fprintf(f, ", \"line\": %ld}", s->fr[i].line);
		else
			fputs(", \"line\": null}", f);
	}
	fputs("]}", f);
}

static uint64_t rd(const _Atomic uint64_t *p)
{
	/* relaxed: reading statistics at exit */
	return atomic_load_explicit(p, memory_order_relaxed);
}

static uint64_t percentile(const struct shim_stat *e, double pct)
{
	uint64_t total = 0, cum = 0, lo, hi;
	uint32_t h[HIST_N];

	for (unsigned b = 0; b < HIST_N; b++) {
		/* relaxed: reading statistics at exit */
		h[b] = atomic_load_explicit(&e->hist[b], memory_order_relaxed);
		total += h[b];
	}
	if (!total)
		return 0;
	uint64_t want = (uint64_t)(pct / 100.0 * (double)total + 0.999999);
	for (unsigned b = 0; b < HIST_N; b++) {
		cum += h[b];
		if (cum >= want) {
			hist_bounds(b, &lo, &hi);
			uint64_t max = rd(&e->hold_max);
			return hi > max ? max : hi;
		}
	}
	return rd(&e->hold_max);
}

static const char *mutex_type(int kind)
{
	if (kind == -1)
		return "destroyed";
	switch (kind & 3) {
	case PTHREAD_MUTEX_RECURSIVE:
		return "recursive";
	case PTHREAD_MUTEX_ERRORCHECK:
		return "errorcheck";
	case PTHREAD_MUTEX_ADAPTIVE_NP:
		return "adaptive";
	default:
		return "normal";
	}
}

static void write_mutex(FILE *f, const struct shim_stat *e, const struct site_info *s)
{
	bool glibc = strcmp(stat_lock_name, "glibc") == 0 || (e->kind != -1 && (e->kind & 0xf0));

	fprintf(f, "{\"addr\": \"0x%lx\", \"type\": \"%s\", \"impl\": \"%s\", \"robust\": %s, \"pi\": %s, "
		   "\"pp\": %s, \"pshared\": %s, ",
		(unsigned long)(e->key & ~(uintptr_t)1), mutex_type(e->kind), glibc ? "glibc" : stat_lock_name,
		e->kind != -1 && (e->kind & 16) ? "true" : "false", e->kind != -1 && (e->kind & 32) ? "true" : "false",
		e->kind != -1 && (e->kind & 64) ? "true" : "false", e->kind != -1 && (e->kind & 128) ? "true" : "false");
	write_site(f, e, s);
	fprintf(f, ", \"inits\": %lu, \"destroys\": %lu, \"acquisitions\": %lu, \"contended\": %lu, "
		   "\"recursive\": %lu, \"trylock_busy\": %lu, \"timeouts\": %lu, \"wait_ns_total\": %lu, "
		   "\"wait_ns_max\": %lu, \"holds\": %lu, \"hold_ns_total\": %lu, \"hold_ns_max\": %lu, "
		   "\"hold_ns_p50\": %lu, \"hold_ns_p99\": %lu, \"hold_hist\": [",
		rd(&e->inits), rd(&e->destroys), rd(&e->acq), rd(&e->contended), rd(&e->recursive),
		rd(&e->trylock_busy), rd(&e->timeouts), rd(&e->wait_total), rd(&e->wait_max), rd(&e->holds),
		rd(&e->hold_total), rd(&e->hold_max), percentile(e, 50), percentile(e, 99));
	bool first = true;
	for (unsigned b = 0; b < HIST_N; b++) {
		/* relaxed: reading statistics at exit */
		uint32_t c = atomic_load_explicit(&e->hist[b], memory_order_relaxed);
		uint64_t lo, hi;
		if (!c)
			continue;
		hist_bounds(b, &lo, &hi);
		fprintf(f, "%s[%lu, ", first ? "" : ", ", lo);
		if (hi == UINT64_MAX)
			fputs("null", f);
		else
			fprintf(f, "%lu", hi);
		fprintf(f, ", %u]", c);
		first = false;
	}
	fputs("], \"misuse\": {", f);
	for (int i = 0; i < SHIM_MISUSE_N; i++)
		fprintf(f, "%s\"%s\": %u", i ? ", " : "", misuse_names[i],
			/* relaxed: reading statistics at exit */
			atomic_load_explicit(&e->misuse[i], memory_order_relaxed));
	fputs("}}", f);
}

static void write_cond(FILE *f, const struct shim_stat *e, const struct site_info *s)
{
	fprintf(f, "{\"addr\": \"0x%lx\", \"clock\": \"%s\", \"impl\": \"%s\", \"pshared\": %s, ",
		(unsigned long)(e->key & ~(uintptr_t)1), (e->kind & 2) ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME",
		(strcmp(stat_lock_name, "glibc") == 0 || (e->kind & 1)) ? "glibc" : "locklab",
		(e->kind & 1) ? "true" : "false");
	write_site(f, e, s);
	fprintf(f, ", \"inits\": %lu, \"destroys\": %lu, \"waits\": %lu, \"timeouts\": %lu, "
		   "\"wait_ns_total\": %lu, \"wait_ns_max\": %lu, \"signals\": %lu, \"broadcasts\": %lu, "
		   "\"wakes_without_waiters\": %lu}",
		rd(&e->inits), rd(&e->destroys), rd(&e->waits), rd(&e->wait_timeouts), rd(&e->cwait_total),
		rd(&e->cwait_max), rd(&e->signals), rd(&e->broadcasts), rd(&e->idle_wakes));
}

static uint32_t misuse_total(const struct shim_stat *e)
{
	uint32_t t = 0;

	for (int i = 0; i < SHIM_MISUSE_N; i++)
		/* relaxed: reading statistics at exit */
		t += atomic_load_explicit(&e->misuse[i], memory_order_relaxed);
	return t;
}

static int rank_mutex(const void *a, const void *b)
{
	const struct shim_stat *x = *(struct shim_stat *const *)a, *y = *(struct shim_stat *const *)b;
	uint64_t kx[3] = { rd(&x->wait_total), rd(&x->contended), rd(&x->acq) };
	uint64_t ky[3] = { rd(&y->wait_total), rd(&y->contended), rd(&y->acq) };

	for (int i = 0; i < 3; i++)
		if (kx[i] != ky[i])
			return kx[i] > ky[i] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int rank_cond(const void *a, const void *b)
{
	const struct shim_stat *x = *(struct shim_stat *const *)a, *y = *(struct shim_stat *const *)b;
	uint64_t kx[2] = { rd(&x->cwait_total), rd(&x->waits) }, ky[2] = { rd(&y->cwait_total), rd(&y->waits) };

	for (int i = 0; i < 2; i++)
		if (kx[i] != ky[i])
			return kx[i] > ky[i] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void write_argv(FILE *f)
{
	char buf[8192];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	fputc('[', f);
	if (n > 0) {
		buf[n] = 0;
		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
			if (i)
				fputs(", ", f);
			json_str(f, buf + i);
		}
	}
	fputc(']', f);
}

static size_t max_listed(void)
{
	const char *v = getenv("LOCKLAB_STAT_MAX");
	long n = v ? atol(v) : 0;

	return n > 0 ? (size_t)n : DEFAULT_MAX_LISTED;
}

/* Writes the profile; returns 0 or -1. */
static int write_profile(void)
{
	/* relaxed: reading statistics at exit */
	uint32_t used = atomic_load_explicit(&arena_used, memory_order_relaxed);
	size_t n = used < MAX_ENTRIES ? used : MAX_ENTRIES, nm = 0, nc = 0;
	struct shim_stat **mx = calloc(n + 1, sizeof(*mx)), **cv = calloc(n + 1, sizeof(*cv));
	uint64_t t_acq = 0, t_cont = 0, t_wait = 0, t_hold = 0, t_cwait = 0, t_waits = 0;
	uint64_t t_mis[SHIM_MISUSE_N] = { 0 };
	int rc = -1;

	if (!mx || !cv)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct shim_stat *e = &arena[i];
		if (e->unused || !e->key)
			continue;
		if (e->key & 1) {
			cv[nc++] = e;
			t_cwait += rd(&e->cwait_total);
			t_waits += rd(&e->waits);
		} else {
			mx[nm++] = e;
			t_acq += rd(&e->acq);
			t_cont += rd(&e->contended);
			t_wait += rd(&e->wait_total);
			t_hold += rd(&e->hold_total);
			for (int k = 0; k < SHIM_MISUSE_N; k++)
				/* relaxed: reading statistics at exit */
				t_mis[k] += atomic_load_explicit(&e->misuse[k], memory_order_relaxed);
		}
	}
	/* a child that never used a lock leaves no file behind (the root always writes one) */
	if (!is_root && nm == 0 && nc == 0) {
		rc = 0;
		goto out;
	}
	qsort(mx, nm, sizeof(*mx), rank_mutex);
	qsort(cv, nc, sizeof(*cv), rank_cond);
	size_t limit = max_listed();
	size_t lm = nm < limit ? nm : limit, lc = nc < limit ? nc : limit;
	/* a mutex that was misused is listed whatever its rank */
	for (size_t i = lm; i < nm; i++) {
		if (misuse_total(mx[i])) {
			struct shim_stat *t = mx[lm];
			mx[lm++] = mx[i];
			mx[i] = t;
		}
	}
	struct site_info *sites = calloc(lm + lc + 1, sizeof(*sites));
	if (!sites)
		goto out;
	for (size_t i = 0; i < lm; i++)
		/* relaxed: the site was recorded by the thread that created the entry */
		sites[i].addr = atomic_load_explicit(&mx[i]->site, memory_order_relaxed);
	for (size_t i = 0; i < lc; i++)
		/* relaxed: as above */
		sites[lm + i].addr = atomic_load_explicit(&cv[i]->site, memory_order_relaxed);
	symbolize(sites, lm + lc);

	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", out_path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		goto out_sites;
	fprintf(f, "{\"schema\": \"locklab-lockstat/1\", \"pid\": %d, \"ppid\": %d, \"root\": %s, \"lock\": ",
		(int)getpid(), (int)getppid(), is_root ? "true" : "false");
	json_str(f, stat_lock_name);
	fputs(", \"exe\": ", f);
	json_str(f, main_exe());
	fputs(", \"argv\": ", f);
	write_argv(f);
	fprintf(f, ", \"clock\": \"CLOCK_MONOTONIC\", \"elapsed_ns\": %lu,\n",
		(unsigned long)(shim_now_ns() - started_ns));
	fprintf(f, "\"objects_tracked\": %zu, \"objects_dropped\": %lu, \"mutexes_omitted\": %zu, "
		   "\"condvars_omitted\": %zu,\n",
		nm + nc, (unsigned long)rd(&dropped), nm - lm, nc - lc);
	fprintf(f, "\"totals\": {\"mutexes\": %zu, \"condvars\": %zu, \"acquisitions\": %lu, \"contended\": %lu, "
		   "\"wait_ns\": %lu, \"hold_ns\": %lu, \"cond_waits\": %lu, \"cond_wait_ns\": %lu, \"misuse\": {",
		nm, nc, t_acq, t_cont, t_wait, t_hold, t_waits, t_cwait);
	for (int k = 0; k < SHIM_MISUSE_N; k++)
		fprintf(f, "%s\"%s\": %lu", k ? ", " : "", misuse_names[k], (unsigned long)t_mis[k]);
	fputs("}},\n\"hist\": \"hold_hist: [lo_ns, hi_ns (null: no bound), count] per non-empty bucket; "
	      "4 buckets per power of two from 16 ns\",\n\"mutexes\": [\n", f);
	for (size_t i = 0; i < lm; i++) {
		write_mutex(f, mx[i], &sites[i]);
		fputs(i + 1 < lm ? ",\n" : "\n", f);
	}
	fputs("],\n\"condvars\": [\n", f);
	for (size_t i = 0; i < lc; i++) {
		write_cond(f, cv[i], &sites[lm + i]);
		fputs(i + 1 < lc ? ",\n" : "\n", f);
	}
	fputs("]}\n", f);
	bool ok = !ferror(f);
	if (fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, out_path) == 0) {
		rc = 0;
	} else {
		shim_say("LOCKLAB_STAT: cannot write %s: %s", out_path, strerror(errno));
		unlink(tmp);
	}
out_sites:
	for (size_t i = 0; i < lm + lc; i++) {
		for (int k = 0; k < sites[i].nfr; k++) {
			free(sites[i].fr[k].function);
			free(sites[i].fr[k].file);
		}
	}
	free(sites);
out:
	free(mx);
	free(cv);
	return rc;
}

/* Runs after the program's own destructors (the shim was loaded, and so initialised, first). */
__attribute__((destructor)) static void stat_at_exit(void)
{
	if (!shim_stat_on || !slots)
		return;
	int saved = errno;
	write_profile();
	errno = saved;
}
