// SPDX-License-Identifier: GPL-2.0
/*
 * omp_procs: how libgomp sized itself (it reads the affinity mask through
 * the C library): omp_get_num_procs() and omp_get_max_threads(), and how
 * many threads a parallel region got.  Under umcg-run --cores N: N each.
 */
#include <omp.h>
#include <stdio.h>

int main(void)
{
	int team = 0;

#pragma omp parallel
	{
#pragma omp single
		team = omp_get_num_threads();
	}
	printf("omp_procs=%d\nomp_max_threads=%d\nomp_team=%d\n", omp_get_num_procs(),
	       omp_get_max_threads(), team);
	return 0;
}
