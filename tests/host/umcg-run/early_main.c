// SPDX-License-Identifier: GPL-2.0
/*
 * Description: joins the thread early_thread.c's constructor started, then
 * starts and joins one of its own; prints "early=ok" and exits 0 when both
 * returned their values.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

extern pthread_t umcg_early_thread;
extern int umcg_early_started;

static void *late(void *arg)
{
	return arg;
}

int main(void)
{
	void *r1 = NULL, *r2 = NULL;
	pthread_t t;

	if (!umcg_early_started || pthread_join(umcg_early_thread, &r1) ||
	    pthread_create(&t, NULL, late, (void *)7) || pthread_join(t, &r2) ||
	    r1 != (void *)42 || r2 != (void *)7) {
		printf("early=FAILED (%ld, %ld)\n", (long)(intptr_t)r1, (long)(intptr_t)r2);
		return 1;
	}
	printf("early=ok\n");
	return 0;
}
