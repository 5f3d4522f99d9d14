// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a library whose constructor starts a thread, before
 * libumcg-preload.so's constructor has set the group up (libraries that do
 * not depend on each other are initialised before the preloaded one).  The
 * thread must start and run as a plain thread; early_main joins it.
 */
#include <pthread.h>
#include <unistd.h>

pthread_t umcg_early_thread;
int umcg_early_started;
static volatile int early_done;

static void *early(void *arg)
{
	usleep(1000);
	early_done = 1;
	return (void *)42;
}

__attribute__((constructor)) static void early_init(void)
{
	umcg_early_started = pthread_create(&umcg_early_thread, NULL, early, NULL) == 0;
}
