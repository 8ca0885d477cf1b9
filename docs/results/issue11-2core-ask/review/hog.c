/* hog SECS [cpu]: a CPU-bound process (optionally pinned), as another tenant of the machine */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	if (argc > 2) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(atoi(argv[2]), &s); sched_setaffinity(0, sizeof(s), &s); }
	struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
	volatile unsigned long x = 0;
	do { for (int i = 0; i < 100000; i++) x++; clock_gettime(CLOCK_MONOTONIC, &t); }
	while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
