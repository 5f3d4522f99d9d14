// SPDX-License-Identifier: GPL-2.0
/*
 * contract - run one contract test program of tests/host/contract (built
 * for the host, the same binary) on a kernel backend (kernel_backend.h:
 * umcg.ko, or the umcg sched_ext scheduler with KB_BACKEND_SCX), with
 * UMCG_BACKEND set to it, which contract.h's ct_config() and ct_backend()
 * follow.  CONTRACT_TEST names the program (CMake sets it: one guest test
 * per contract program, so each gets the VM runner's timeout of its own).
 *
 * Output and exit status are the program's own (kselftest TAP; 4 is skip);
 * the program is skipped, with the reason, if the backend cannot be had.
 * The wrapper fails when the backend did not survive the program (an
 * ejected scheduler), or when what it loaded does not unload once the
 * program is gone (C7: process exit leaves no kernel state behind).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel_backend.h"

#ifndef CONTRACT_TEST
#error "CONTRACT_TEST must name the contract program"
#endif

#define KSFT_SKIP	4

int main(int argc, char **argv)
{
	char prog[PATH_MAX];
	const char *why;
	int status, ret;
	pid_t pid;

	why = kb_backend_get();
	if (why) {
		printf("TAP version 13\n1..0 # SKIP %s\n", why);
		return KSFT_SKIP;
	}
	snprintf(prog, sizeof(prog), "%s/tests/host/contract/contract_%s",
		 umcg_test_build_dir(), CONTRACT_TEST);
	if (access(prog, X_OK)) {
		printf("TAP version 13\n1..0 # SKIP %s: %s\n", prog, strerror(errno));
		return KSFT_SKIP;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		setenv("UMCG_BACKEND", KB_BACKEND, 1);
		argv[0] = prog;
		execv(prog, argv);
		perror(prog);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (!WIFEXITED(status))
		printf("# %s: killed by signal %d\n", prog, WTERMSIG(status));
	why = kb_backend_lost();
	if (why) {
		printf("# after %s: %s\n", prog, why);
		if (!ret)
			ret = 1;
	}
	if (kb_loaded) {
		int err = kb_backend_put();

		if (err) {
			printf("# the %s backend stayed in use after %s exited: "
			       "unload: %s\n", KB_BACKEND, prog, strerror(-err));
			return ret ? ret : 1;
		}
	}
	return ret;
}
