// SPDX-License-Identifier: GPL-2.0
/*
 * trace.c - defines umcg.ko's tracepoints (umcg_trace.h).
 */
#define CREATE_TRACE_POINTS
#include "umcg_trace.h"

/* The plain numbers umcg_trace.h prints states, flags and kinds with. */
static_assert(UMCG_TASK_NEW == 0 && UMCG_TASK_RUNNABLE == 1 &&
	      UMCG_TASK_RUNNING == 2 && UMCG_TASK_BLOCKED == 3 &&
	      UMCG_TASK_PARKED == 4 && UMCG_TASK_DONE == 5);
static_assert(UMCG_TASK_STATE_MASK == 0xff && UMCG_TF_MASK == 0xff00);
static_assert(UMCG_TF_PREEMPT == 0x100 && UMCG_TF_PERMIT == 0x200 &&
	      UMCG_TF_INLIB == 0x400);
static_assert(UMCG_REGISTER_WORKER == 1 && UMCG_REGISTER_SERVER == 2);
