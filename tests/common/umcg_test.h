/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_test.h - helpers shared by guest tests: where the build outputs are
 * inside the test VM, and loading and unloading modules.
 */
#ifndef UMCG_TEST_H
#define UMCG_TEST_H

#include <stddef.h>

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

/*
 * Read @fd until end of file, or until @buf (@len bytes, @len > 0) is
 * full but for a NUL, which ends what was read.  Returns the bytes read.
 */
size_t umcg_test_read_all(int fd, char *buf, size_t len);

#endif /* UMCG_TEST_H */
