/* SPDX-License-Identifier: MIT */
/*
 * tests/install-use.c - the C program that tests/install-smoke.sh (pkg-config) and
 * tests/install-cmake.sh (find_package) build against an installed locklab: 4 threads count under
 * an lk_mutex and report through an lk_cond; exits 0 when the count is exact.
 */
#include <locklab/locklab.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static lk_cond_t c = LK_COND_INITIALIZER;
static int ready, counter;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		lk_mutex_lock(&m);
		counter++;
		lk_mutex_unlock(&m);
	}
	lk_mutex_lock(&m);
	ready++;
	lk_cond_broadcast(&c);
	lk_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	lk_mutex_lock(&m);
	while (ready < 4)
		lk_cond_wait(&c, &m);
	lk_mutex_unlock(&m);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (counter != 40000) {
		fprintf(stderr, "install-use: counter %d, expected 40000\n", counter);
		return 1;
	}
	printf("install-use: ok with locklab %s\n", lk_version());
	return strcmp(lk_version(), "") == 0;
}
