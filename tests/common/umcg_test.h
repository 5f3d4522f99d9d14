/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_test.h - helpers shared by guest tests: where the build outputs are
 * inside the test VM, loading and unloading modules, and making sure the
 * umcg sched_ext scheduler is loaded.
 */
#ifndef UMCG_TEST_H
#define UMCG_TEST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The build directory: $UMCG_BUILD_DIR (set by tools/umcg-vm), else two
 * levels above the running test (build/tests/guest/<test>).
 */
const char *umcg_test_build_dir(void);

/*
 * Path of a per-kernel build output: "<build>/<subdir>/<uname -r>/<file>".
 * Returns 0, -ENAMETOOLONG or another -errno from uname().
 */
int umcg_test_kernel_path(char *buf, size_t len, const char *subdir, const char *file);

/*
 * finit_module() of @path with the parameters in $UMCG_TEST_KMOD_PARAMS
 * (tools/umcg-lockdep sets "hook=kprobe"), else none.  0, -EEXIST or
 * -errno.
 */
int umcg_test_kmod_load(const char *path);

/* finit_module() of @path with module parameters @params ("a=b c=d"). */
int umcg_test_kmod_load_params(const char *path, const char *params);

/* delete_module(@name, O_NONBLOCK).  0, -ENOENT when not loaded, or -errno. */
int umcg_test_kmod_unload(const char *name);

/* 1 when /sys/module/@name exists, 0 when not. */
int umcg_test_kmod_loaded(const char *name);

/* The kernel's sched_ext directory: absent on a kernel without sched_ext. */
#define UMCG_TEST_SCX_SYSFS	"/sys/kernel/sched_ext"

/*
 * Which sched_ext scheduler is enabled: 1 ours (UMCG_SCX_OPS_NAME), 0 none
 * (or no sched_ext), -1 another one, whose name is then in @ops.
 */
int umcg_test_scx_state(char *ops, size_t len);

/*
 * Open this build's tools/umcgctl (O_PATH) for umcg_test_umcgctl_as(),
 * once per process; later calls return 0 at once.  The first call must be
 * made by a user that can reach the file (root): the others run it
 * through this descriptor, so they need no search permission on the
 * checkout's directories (a clone in /root, mode 0700).  That is all they
 * need: umcgctl loads no library of this build (libbpf and libc are the
 * system's), unlike the programs that umcg_test_stage_make() copies.
 * 0 or -errno.
 */
int umcg_test_umcgctl_open(void);

/*
 * Run this build's umcgctl with @args (words separated by spaces, no
 * quoting), as @uid and @gid (umcg_test_drop_to()) unless @uid is
 * (uid_t)-1, its standard output and error into @out (@len bytes, NUL
 * terminated; what does not fit is read and dropped).  Returns its exit
 * status, 128 + the signal that killed it, or -errno (@out says why).
 */
int umcg_test_umcgctl_as(uid_t uid, gid_t gid, char *out, size_t len, const char *args);

/*
 * Run this build's "umcgctl @verb" (@verb may carry arguments, as for
 * umcg_test_umcgctl_as()), its output as TAP comments ("# ...") on stdout,
 * or discarded when @quiet.  Returns its exit status (0: it succeeded), or
 * -errno when it could not be run.
 */
int umcg_test_umcgctl(const char *verb, bool quiet);

/*
 * Make sure our scheduler is enabled, loading it with umcgctl when no
 * sched_ext scheduler is.  Returns NULL when it is enabled (*@loaded: we
 * loaded it, and umcg_test_scx_put() should unload it), else why not (no
 * sched_ext, another scheduler, umcgctl failed): the caller SKIPs.
 */
const char *umcg_test_scx_get(bool *loaded);

/* "umcgctl unload" (what umcg_test_scx_get() loaded).  0 or -EIO. */
int umcg_test_scx_put(void);

/*
 * The enforcer's counter @idx (UMCG_SCX_ENF_*, uapi/umcg_scx.h) summed over
 * the CPUs, read through its public pin (/sys/fs/bpf/umcg/enf_stats) into
 * *@val.  0 or -errno (-ENOENT: our scheduler is not loaded by umcgctl).
 */
int umcg_test_scx_enf_stat(unsigned int idx, uint64_t *val);

/*
 * Read @fd until end of file, or until @buf (@len bytes, @len > 0) is
 * full but for a NUL, which ends what was read.  Returns the bytes read.
 */
size_t umcg_test_read_all(int fd, char *buf, size_t len);

/* The first line of file @path, without its newline, in @buf: 0 or -errno. */
int umcg_test_read_line(const char *path, char *buf, size_t len);

/*
 * Become @uid/@gid for good: no supplementary groups, no capabilities
 * left, and in "/" (the working directory it had may be one @uid cannot
 * enter).  0 or -errno (-EPERM if a capability survived).
 */
int umcg_test_drop_to(uid_t uid, gid_t gid);

/*
 * A private copy of build outputs for another user to run, wherever the
 * checkout is (a clone under /root, mode 0700, cannot be searched by
 * others, so they cannot exec what is in it, nor load its libumcg.so).
 *
 * umcg_test_stage_make() copies each of @files (paths relative to the
 * build directory, NULL-terminated) to the same path under a fresh
 * directory made in /tmp, and with them the shared libraries of this
 * build that they load: each DT_NEEDED of theirs found in a DT_RUNPATH
 * (or DT_RPATH) directory inside the build directory, at its own path
 * there (so libumcg/libumcg.so.0), recursively.  The directory and all in
 * it are root's, mode 0755: others may read and run them, not change
 * them.  The copy has the build directory's layout: a program there that
 * finds others through umcg_test_build_dir() finds their copies.  On
 * failure nothing is left behind.  0 or -errno.
 *
 * The other user's process, after umcg_test_drop_to(), calls
 * umcg_test_stage_enter(): it goes into the directory and sets
 * UMCG_BUILD_DIR to it and LD_LIBRARY_PATH to the directories of the
 * libraries copied (searched before a DT_RUNPATH into the checkout), then
 * execs "<dir>/<file>".  umcg_test_stage_remove() deletes the directory
 * (once; later calls do nothing).
 */
struct umcg_test_stage {
	char	dir[64];		/* "/tmp/umcg-stage.XXXXXX"; "" when none */
	char	build[PATH_MAX];	/* the build directory, resolved */
	char	libpath[PATH_MAX];	/* for LD_LIBRARY_PATH; "" when none */
};

int umcg_test_stage_make(struct umcg_test_stage *st, const char *const *files);
int umcg_test_stage_enter(const struct umcg_test_stage *st);
void umcg_test_stage_remove(struct umcg_test_stage *st);

#endif /* UMCG_TEST_H */
