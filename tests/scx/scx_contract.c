// SPDX-License-Identifier: GPL-2.0
/*
 * scx_contract - run one contract test program of tests/host/contract
 * (built for the host, the same binary) on libumcg's "scx" backend: with
 * the umcg sched_ext scheduler loaded and pinned ("umcgctl load") and
 * UMCG_BACKEND=scx, which contract.h's ct_config() and ct_backend()
 * follow.  CONTRACT_TEST names the program (CMake sets it: one guest test
 * per contract program, each with the VM runner's timeout of its own).
 *
 * Output and exit status are the program's own (kselftest TAP; 4 is skip).
 * The program is skipped, with the reason, on a kernel without sched_ext,
 * when another sched_ext scheduler is loaded, and when ours cannot be
 * loaded.  A scheduler this wrapper loaded is unloaded afterwards, and the
 * wrapper fails if it did not stay enabled throughout (an ejection).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uapi/umcg.h>

#include "umcg_test.h"

#ifndef CONTRACT_TEST
#error "CONTRACT_TEST must name the contract program"
#endif

#define KSFT_SKIP	4
#define SCX_SYSFS	"/sys/kernel/sched_ext"

static int sysfs_read(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), SCX_SYSFS "/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* 1: ours is enabled; 0: none is; -1: another one is (@ops says which). */
static int scx_loaded(char *ops, size_t len)
{
	char state[32] = "";

	ops[0] = '\0';
	sysfs_read("state", state, sizeof(state));
	if (strcmp(state, "enabled"))
		return 0;
	sysfs_read("root/ops", ops, len);
	return strcmp(ops, UMCG_SCX_OPS_NAME) ? -1 : 1;
}

/* Run umcgctl @verb (its output as TAP comments unless @quiet); its status. */
static int umcgctl(const char *verb, bool quiet)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "%s/tools/umcgctl %s 2>&1 %s",
		 umcg_test_build_dir(), verb,
		 quiet ? "> /dev/null" : "| sed 's/^/# /'");
	fflush(stdout);
	return system(cmd);
}

int main(int argc, char **argv)
{
	char prog[PATH_MAX], ops[64];
	bool loaded = false;
	int status, ret, l;
	pid_t pid;

	if (access(SCX_SYSFS, F_OK)) {
		printf("TAP version 13\n1..0 # SKIP no sched_ext in this kernel "
		       "(" SCX_SYSFS " is missing)\n");
		return KSFT_SKIP;
	}
	l = scx_loaded(ops, sizeof(ops));
	if (l < 0) {
		printf("TAP version 13\n1..0 # SKIP another sched_ext scheduler "
		       "(\"%s\") is loaded\n", ops);
		return KSFT_SKIP;
	}
	if (!l) {
		if (umcgctl("load", true) || scx_loaded(ops, sizeof(ops)) != 1) {
			printf("TAP version 13\n1..0 # SKIP the umcg scheduler cannot be "
			       "loaded (%s/tools/umcgctl load)\n", umcg_test_build_dir());
			return KSFT_SKIP;
		}
		loaded = true;
	}
	snprintf(prog, sizeof(prog), "%s/tests/host/contract/contract_%s",
		 umcg_test_build_dir(), CONTRACT_TEST);
	if (access(prog, X_OK)) {
		printf("TAP version 13\n1..0 # SKIP %s: %s\n", prog, strerror(errno));
		if (loaded)
			umcgctl("unload", true);
		return KSFT_SKIP;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		setenv("UMCG_BACKEND", "scx", 1);
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
	/* C7: the scheduler must have survived the program. */
	if (scx_loaded(ops, sizeof(ops)) != 1) {
		printf("# the umcg scheduler is no longer enabled after %s "
		       "(umcgctl status):\n", prog);
		fflush(stdout);
		umcgctl("status", false);
		if (!ret)
			ret = 1;
	}
	if (loaded && umcgctl("unload", true)) {
		printf("# umcgctl unload failed after %s\n", prog);
		if (!ret)
			ret = 1;
	}
	return ret;
}
