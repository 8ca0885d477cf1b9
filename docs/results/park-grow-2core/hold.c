/* SPDX-License-Identifier: MIT */
/*
 * docs/results/park-grow-2core/hold.c - how long one growth holds the old table's buckets, read from
 * inside: linked with a copy of src/park.c whose park_impl.h has instrument.patch applied (run.sh),
 * which times grow() from its first bucket lock to its last unlock (bucket 0 is held all of that
 * time; the others a little less). Best and median of 15 processes per size (run.sh).
 */
#include <stdint.h>
#include <stdio.h>

#include <locklab/park.h>

extern uint64_t lkp_hold_ns;

int main(void)
{
	if (lk_park_reserve(16))
		return 1;
	for (size_t n = 16; n < ((size_t)1 << 20); n *= 2) {
		if (lk_park_reserve(2 * n))
			return 1;
		printf("%zu %.1f\n", n, lkp_hold_ns / 1e3);
	}
	return 0;
}
