/* SPDX-License-Identifier: MIT */
/*
 * tests/advise/common.h - argument parsing shared by the `locklab advise` test programs
 * (the .c files beside it): "--name value" pairs, an integer range per option, one line on stderr and
 * exit status 2 for anything else.
 */
#ifndef LOCKLAB_ADVISE_COMMON_H
#define LOCKLAB_ADVISE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *advise_prog = "advise";

static inline void advise_bad(const char *opt, const char *what, const char *got)
{
	fprintf(stderr, "%s: %s: expected %s, got '%s'\n", advise_prog, opt, what, got);
	exit(2);
}

/* The value of option argv[*i] as an integer in [lo, hi]; advances *i past it. */
static inline uint64_t advise_uint(int argc, char **argv, int *i, uint64_t lo, uint64_t hi)
{
	const char *opt = argv[*i], *v;
	char what[80], *end = NULL;
	unsigned long long x;

	snprintf(what, sizeof(what), "an integer in [%llu, %llu]", (unsigned long long)lo,
		 (unsigned long long)hi);
	if (*i + 1 >= argc)
		advise_bad(opt, what, "");
	v = argv[++*i];
	x = strtoull(v, &end, 10);
	if (!*v || *end || *v == '-' || x < lo || x > hi)
		advise_bad(opt, what, v);
	return x;
}

/* Private work that the compiler cannot remove: `rounds` steps of a 64-bit mixer. */
static inline uint64_t advise_mix(uint64_t x, unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ull;
		__asm__ __volatile__("" : "+r"(x));
	}
	return x;
}

#endif
