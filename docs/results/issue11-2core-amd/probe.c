/* probe.c - how fast one CPU runs a fixed busy loop, chunk after chunk, for N seconds: prints
 * "ms since start, us this chunk took" lines, pinned to the CPU given (speed.sh). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec*1e-6;}
int main(int c, char **v){
	if (c != 3) {
		fprintf(stderr, "usage: probe CPU SECONDS\n");
		return 2;
	}
	int cpu=atoi(v[1]); double secs=atof(v[2]);
	cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu,&s);
	if (sched_setaffinity(0,sizeof s,&s)) {
		perror("probe: sched_setaffinity");
		return 1;
	}
	volatile unsigned long x=0; double t0=now(), t=t0;
	while (t - t0 < secs*1e3) {
		double a=now();
		for (unsigned long i=0;i<400000;i++) x+=i;
		t=now();
		printf("%.3f %.1f\n", t-t0, (t-a)*1e3);
	}
	return 0;
}
