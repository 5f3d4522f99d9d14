// SPDX-License-Identifier: GPL-2.0
/*
 * contract - run one contract test program of tests/host/contract (built
 * for the host, the same binary) on the "kmod" backend: with umcg.ko
 * loaded and UMCG_BACKEND=kmod, which contract.h's ct_config() and
 * ct_backend() follow.  CONTRACT_TEST names the program (CMake sets it:
 * one guest test per contract program, so each gets the VM runner's
 * timeout of its own).
 *
 * Output and exit status are the program's own (kselftest TAP; 4 is skip);
 * the program is skipped, with the reason, if /dev/umcg cannot be had.  A
 * module this wrapper loaded must unload once the program is gone (C7:
 * process exit leaves no kernel state behind); if it does not, the wrapper
 * fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kmod_backend.h"

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

	why = kb_module_get();
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
		setenv("UMCG_BACKEND", "kmod", 1);
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
	if (kb_loaded) {
		int err = kb_module_put();

		if (err) {
			printf("# %s stayed in use after %s exited: unload: %s\n",
			       KB_MODULE, prog, strerror(-err));
			return ret ? ret : 1;
		}
	}
	return ret;
}
