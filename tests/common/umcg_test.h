/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_test.h - helpers shared by guest tests: where the build outputs are
 * inside the test VM, loading and unloading modules, and making sure the
 * umcg sched_ext scheduler is loaded.
 */
#ifndef UMCG_TEST_H
#define UMCG_TEST_H

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
 * checkout's directories (a clone in /root, mode 0700).  0 or -errno.
 */
int umcg_test_umcgctl_open(void);

/*
 * Run this build's umcgctl with @args (words separated by spaces, no
 * quoting), as @uid and @gid without supplementary groups unless @uid is
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
 * left.  0 or -errno (-EPERM if a capability survived).
 */
int umcg_test_drop_to(uid_t uid, gid_t gid);

#endif /* UMCG_TEST_H */
