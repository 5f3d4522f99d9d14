// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the ioctl ABI of /dev/umcg: UMCG_IOC_GET_INFO's answer, and
 * for every command the validation of its extensible argument struct
 * (uapi/umcg.h) before the command runs.  A valid REGISTER succeeds and
 * is undone at once; a valid UNREGISTER, WAIT or SWITCH of an unregistered
 * thread is -ENOENT; a valid WAKE or PREEMPT of tid 0 is -ESRCH.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_probe.h"
#include "kmod_test.h"

/* The largest size an ioctl number can carry. */
#define UMCG_IOC_SIZE_MAX	((1U << _IOC_SIZEBITS) - 1)

/* Room for an argument of any size an ioctl number can carry. */
#define UMCG_ARG_BUF		(UMCG_IOC_SIZE_MAX + 1)

/* @cmd with its size bits replaced by @size. */
static unsigned int umcg_cmd_sized(unsigned int cmd, size_t size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* The common head of every argument struct. */
struct umcg_arg_head {
	__u32 size;
	__u32 flags;
};

/* Open /dev/umcg, loading umcg.ko first if needed. */
static void umcg_dev_open(struct __test_metadata *_metadata, int *fd,
			  bool *loaded)
{
	*fd = -1;
	if (!umcg_kmod_get(_metadata, loaded))
		return;
	*fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, *fd) TH_LOG("open %s: %s", UMCG_DEVICE_PATH,
				 strerror(errno));
}

static void umcg_dev_close(struct __test_metadata *_metadata, int fd,
			   bool loaded)
{
	if (fd >= 0)
		EXPECT_EQ(0, close(fd));
	if (loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/*
 * Check the outcome of an ioctl that should fail with @err, or succeed when
 * @err is 0.  Call as umcg_expect(_metadata, ioctl(...), err, what), so that
 * errno is still the ioctl's.
 */
static void umcg_expect(struct __test_metadata *_metadata, int ret, int err,
			const char *what)
{
	int seen = errno;

	if (err) {
		ASSERT_EQ(-1, ret) TH_LOG("%s", what);
		EXPECT_EQ(err, seen) TH_LOG("%s: %s", what, strerror(seen));
	} else {
		ASSERT_EQ(0, ret) TH_LOG("%s: %s", what, strerror(seen));
	}
}

/* ---- UMCG_IOC_GET_INFO and unknown commands ---- */

FIXTURE(umcg_dev) {
	int fd;
	bool loaded;
};

FIXTURE_SETUP(umcg_dev)
{
	umcg_dev_open(_metadata, &self->fd, &self->loaded);
}

FIXTURE_TEARDOWN(umcg_dev)
{
	umcg_dev_close(_metadata, self->fd, self->loaded);
}

static void umcg_info_check(struct __test_metadata *_metadata,
			    const struct umcg_info *info)
{
	EXPECT_EQ(UMCG_API_VERSION, info->api_version);
	EXPECT_EQ(UMCG_KMOD_TEST_FEATURES,
		  info->features);
	EXPECT_LT(0, info->max_tasks);
	EXPECT_EQ(0, info->flags);
	EXPECT_TRUE(all_zero(info->reserved, sizeof(info->reserved)));
}

TEST_F(umcg_dev, get_info)
{
	struct umcg_info info = { .size = sizeof(info) };

	/* Output fields are overwritten, whatever they held. */
	info.api_version = 0xdeadbeef;
	info.max_tasks = 0xdeadbeef;
	info.features = ~0ULL;
	ASSERT_EQ(0, ioctl(self->fd, UMCG_IOC_GET_INFO, &info));
	EXPECT_EQ(UMCG_INFO_SIZE_VER0, info.size);
	umcg_info_check(_metadata, &info);
}

TEST_F(umcg_dev, get_info_bigger_struct)
{
	struct {
		struct umcg_info info;
		__u64 tail[4];
	} big = { .info.size = sizeof(big) };

	big.info.features = ~0ULL;
	ASSERT_EQ(0, ioctl(self->fd, _IOWR(UMCG_IOC_MAGIC, 0x00, big), &big));
	EXPECT_EQ(sizeof(big), big.info.size);
	umcg_info_check(_metadata, &big.info);
	EXPECT_TRUE(all_zero(big.tail, sizeof(big.tail)));
}

TEST_F(umcg_dev, get_info_libumcg)
{
	struct umcg_info info;

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, umcg_kmod_get_info(&info));
	umcg_info_check(_metadata, &info);
}

TEST_F(umcg_dev, unknown_nr)
{
	static const unsigned int nrs[] = { 0x07, 0x08, 0x10, 0x3f, 0x80, 0xff };
	static const unsigned int dirs[] = {
		_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	struct umcg_info info = { .size = sizeof(info) };
	char what[64];

	for (size_t i = 0; i < ARRAY_SIZE(nrs); i++) {
		for (size_t j = 0; j < ARRAY_SIZE(dirs); j++) {
			unsigned int cmd = _IOC(dirs[j], UMCG_IOC_MAGIC, nrs[i],
						sizeof(info));

			snprintf(what, sizeof(what), "nr %#x dir %u", nrs[i],
				 dirs[j]);
			umcg_expect(_metadata, ioctl(self->fd, cmd, &info),
				    ENOTTY, what);
		}
	}
}

/* ---- Every command's argument validation ---- */

/*
 * One change that makes a valid argument invalid (-EINVAL): store the
 * @len-byte @val at @off.  Lists of them end with @len 0.
 */
struct umcg_bad_field {
	const char *what;
	unsigned int off;
	unsigned int len;
	__u64 val;
};

#define BAD32(type, field, v) \
	{ #field " = " #v, offsetof(type, field), 4, (v) }
#define BAD64(type, field, v) \
	{ #field " = " #v, offsetof(type, field), 8, (v) }

static const struct umcg_bad_field umcg_info_bad[] = {
	BAD32(struct umcg_info, flags, 1),
	BAD32(struct umcg_info, flags, 1U << 31),
	BAD64(struct umcg_info, reserved[0], 1),
	BAD64(struct umcg_info, reserved[1], 1),
	BAD64(struct umcg_info, reserved[2], 1),
	BAD64(struct umcg_info, reserved[2], 1ULL << 63),
	{}
};

static const struct umcg_bad_field umcg_register_bad[] = {
	BAD32(struct umcg_register_args, flags, 0),
	BAD32(struct umcg_register_args, flags,
	      UMCG_REGISTER_WORKER | UMCG_REGISTER_SERVER),
	BAD32(struct umcg_register_args, flags, 1U << 2),
	BAD32(struct umcg_register_args, flags, UMCG_REGISTER_WORKER | 1U << 31),
	BAD32(struct umcg_register_args, flags, UMCG_REGISTER_SERVER | 1U << 31),
	BAD64(struct umcg_register_args, reserved[0], 1),
	BAD64(struct umcg_register_args, reserved[1], 1ULL << 63),
	{}
};

static const struct umcg_bad_field umcg_unregister_bad[] = {
	BAD32(struct umcg_unregister_args, flags, 1),
	BAD32(struct umcg_unregister_args, flags, 1U << 31),
	{}
};

static const struct umcg_bad_field umcg_wait_bad[] = {
	BAD32(struct umcg_wait_args, flags, 1U << 1),
	BAD32(struct umcg_wait_args, flags, UMCG_WAIT_ABSTIME | 1U << 1),
	BAD32(struct umcg_wait_args, flags, 1U << 31),
	{}
};

static const struct umcg_bad_field umcg_wake_bad[] = {
	BAD32(struct umcg_wake_args, flags, 1),
	BAD32(struct umcg_wake_args, flags, 1U << 31),
	BAD32(struct umcg_wake_args, pad, 1),
	BAD32(struct umcg_wake_args, pad, 1U << 31),
	{}
};

static const struct umcg_bad_field umcg_preempt_bad[] = {
	BAD32(struct umcg_preempt_args, flags, 1),
	BAD32(struct umcg_preempt_args, flags, 1U << 31),
	BAD32(struct umcg_preempt_args, pad, 1),
	BAD32(struct umcg_preempt_args, pad, 1U << 31),
	{}
};

static const struct umcg_bad_field umcg_switch_bad[] = {
	BAD32(struct umcg_switch_args, flags, 1U << 1),
	BAD32(struct umcg_switch_args, flags, UMCG_WAIT_ABSTIME | 1U << 1),
	BAD32(struct umcg_switch_args, flags, 1U << 31),
	BAD32(struct umcg_switch_args, pad, 1),
	BAD32(struct umcg_switch_args, pad, 1U << 31),
	{}
};

FIXTURE(umcg_cmd) {
	int fd;
	bool loaded;
	__u64 buf[UMCG_ARG_BUF / 8];
	__u64 copy[UMCG_ARG_BUF / 8];
};

FIXTURE_VARIANT(umcg_cmd) {
	unsigned int cmd;
	size_t ver0;
	__u32 flags;	/* valid flags */
	int err;	/* errno of a valid call, 0 when it succeeds */
	const struct umcg_bad_field *bad;	/* flags, pad, reserved */
};

FIXTURE_VARIANT_ADD(umcg_cmd, get_info) {
	.cmd = UMCG_IOC_GET_INFO,
	.ver0 = UMCG_INFO_SIZE_VER0,
	.err = 0,
	.bad = umcg_info_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, register_worker) {
	.cmd = UMCG_IOC_REGISTER,
	.ver0 = UMCG_REGISTER_SIZE_VER0,
	.flags = UMCG_REGISTER_WORKER,
	.err = 0,
	.bad = umcg_register_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, register_server) {
	.cmd = UMCG_IOC_REGISTER,
	.ver0 = UMCG_REGISTER_SIZE_VER0,
	.flags = UMCG_REGISTER_SERVER,
	.err = 0,
	.bad = umcg_register_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, unregister) {
	.cmd = UMCG_IOC_UNREGISTER,
	.ver0 = UMCG_UNREGISTER_SIZE_VER0,
	.err = ENOENT,
	.bad = umcg_unregister_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, wait) {
	.cmd = UMCG_IOC_WAIT,
	.ver0 = UMCG_WAIT_SIZE_VER0,
	.err = ENOENT,
	.bad = umcg_wait_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, wait_abstime) {
	.cmd = UMCG_IOC_WAIT,
	.ver0 = UMCG_WAIT_SIZE_VER0,
	.flags = UMCG_WAIT_ABSTIME,
	.err = ENOENT,
	.bad = umcg_wait_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, wake) {
	.cmd = UMCG_IOC_WAKE,
	.ver0 = UMCG_WAKE_SIZE_VER0,
	.err = ESRCH,
	.bad = umcg_wake_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, switch_to) {
	.cmd = UMCG_IOC_SWITCH,
	.ver0 = UMCG_SWITCH_SIZE_VER0,
	.err = ENOENT,
	.bad = umcg_switch_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, switch_to_abstime) {
	.cmd = UMCG_IOC_SWITCH,
	.ver0 = UMCG_SWITCH_SIZE_VER0,
	.flags = UMCG_WAIT_ABSTIME,
	.err = ENOENT,
	.bad = umcg_switch_bad,
};

FIXTURE_VARIANT_ADD(umcg_cmd, preempt) {
	.cmd = UMCG_IOC_PREEMPT,
	.ver0 = UMCG_PREEMPT_SIZE_VER0,
	.err = ESRCH,
	.bad = umcg_preempt_bad,
};

FIXTURE_SETUP(umcg_cmd)
{
	umcg_dev_open(_metadata, &self->fd, &self->loaded);
}

FIXTURE_TEARDOWN(umcg_cmd)
{
	umcg_dev_close(_metadata, self->fd, self->loaded);
}

/*
 * After a command succeeded: undo a REGISTER, so that the next valid one
 * succeeds too.
 */
static void umcg_cmd_undo(struct __test_metadata *_metadata,
			  const FIXTURE_VARIANT(umcg_cmd) *variant, int fd)
{
	struct umcg_unregister_args un = { .size = sizeof(un) };

	if (variant->cmd == UMCG_IOC_REGISTER && !variant->err)
		ASSERT_EQ(0, ioctl(fd, UMCG_IOC_UNREGISTER, &un))
			TH_LOG("unregister: %s", strerror(errno));
}

/* A valid @usize-byte argument of the variant's command at @arg. */
static void umcg_arg_init(const FIXTURE_VARIANT(umcg_cmd) *variant,
			  void *arg, size_t usize)
{
	struct umcg_arg_head *head = arg;

	memset(arg, 0, usize);
	head->size = usize;
	head->flags = variant->flags;
}

TEST_F(umcg_cmd, valid)
{
	umcg_arg_init(variant, self->buf, variant->ver0);
	umcg_expect(_metadata, ioctl(self->fd, variant->cmd, self->buf),
		    variant->err, "valid argument");
	umcg_cmd_undo(_metadata, variant, self->fd);
}

TEST_F(umcg_cmd, bad_fields)
{
	const struct umcg_bad_field *bad;
	unsigned char *buf = (unsigned char *)self->buf;
	int n = 0;

	for (bad = variant->bad; bad->len; bad++, n++) {
		__u32 v32 = bad->val;

		umcg_arg_init(variant, buf, variant->ver0);
		if (bad->len == 4)
			memcpy(buf + bad->off, &v32, 4);
		else
			memcpy(buf + bad->off, &bad->val, 8);
		memcpy(self->copy, buf, variant->ver0);

		ASSERT_EQ(-1, ioctl(self->fd, variant->cmd, buf))
			TH_LOG("%s", bad->what);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s", bad->what);
		/* Nothing is copied back on failure. */
		EXPECT_EQ(0, memcmp(self->copy, buf, variant->ver0))
			TH_LOG("%s", bad->what);
	}
	ASSERT_LE(2, n);
}

/* The size field must say _IOC_SIZE(cmd), whatever that is. */
TEST_F(umcg_cmd, size_field_mismatch)
{
	const struct {
		size_t ioc_size;
		__u32 size;
	} cases[] = {
		{ variant->ver0, 0 },
		{ variant->ver0, 4 },
		{ variant->ver0, variant->ver0 - 1 },
		{ variant->ver0, variant->ver0 + 8 },
		{ variant->ver0, UMCG_IOC_SIZE_MAX },
		{ variant->ver0 + 8, variant->ver0 },
		{ variant->ver0 + 8, variant->ver0 + 16 },
	};
	struct umcg_arg_head *head = (struct umcg_arg_head *)self->buf;
	char what[64];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t usize = cases[i].ioc_size;

		snprintf(what, sizeof(what), "_IOC_SIZE %zu, size %u", usize,
			 cases[i].size);
		umcg_arg_init(variant, head, usize);
		head->size = cases[i].size;
		memcpy(self->copy, head, usize);
		ASSERT_EQ(-1, ioctl(self->fd,
				    umcg_cmd_sized(variant->cmd, usize),
				    head)) TH_LOG("%s", what);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s", what);
		EXPECT_EQ(0, memcmp(self->copy, head, usize)) TH_LOG("%s", what);
	}
}

/* A newer caller's bigger struct is fine if its extra bytes are zero. */
TEST_F(umcg_cmd, bigger_struct_zero_tail)
{
	const size_t sizes[] = {
		variant->ver0 + 4, variant->ver0 + 64, 4096 + 8,
		UMCG_IOC_SIZE_MAX,
	};
	unsigned char *buf = (unsigned char *)self->buf;
	char what[64];

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t usize = sizes[i];

		snprintf(what, sizeof(what), "size %zu", usize);
		umcg_arg_init(variant, buf, usize);
		umcg_expect(_metadata,
			    ioctl(self->fd, umcg_cmd_sized(variant->cmd, usize),
				  buf),
			    variant->err, what);
		umcg_cmd_undo(_metadata, variant, self->fd);
		EXPECT_TRUE(all_zero(buf + variant->ver0, usize - variant->ver0))
			TH_LOG("%s: tail changed", what);
	}
}

/* ... and -E2BIG if any of them is not. */
TEST_F(umcg_cmd, bigger_struct_nonzero_tail)
{
	const size_t sizes[] = {
		variant->ver0 + 8, variant->ver0 + 64, UMCG_IOC_SIZE_MAX,
	};
	unsigned char *buf = (unsigned char *)self->buf;
	char what[64];

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		const size_t pos[] = { variant->ver0, sizes[i] - 1 };
		size_t usize = sizes[i];

		for (size_t j = 0; j < 2; j++) {
			snprintf(what, sizeof(what), "size %zu, byte %zu",
				 usize, pos[j]);
			umcg_arg_init(variant, buf, usize);
			buf[pos[j]] = 1;
			memcpy(self->copy, buf, usize);
			ASSERT_EQ(-1, ioctl(self->fd,
					    umcg_cmd_sized(variant->cmd, usize),
					    buf)) TH_LOG("%s", what);
			EXPECT_EQ(E2BIG, errno) TH_LOG("%s", what);
			EXPECT_EQ(0, memcmp(self->copy, buf, usize))
				TH_LOG("%s", what);
		}
	}
}

/*
 * An ioctl number whose size is below VER0 is not one of ours, even with a
 * size field that agrees with it.
 */
TEST_F(umcg_cmd, ioc_size_below_ver0)
{
	const size_t sizes[] = { 0, 4, variant->ver0 / 2, variant->ver0 - 1 };
	char what[64];

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		snprintf(what, sizeof(what), "size %zu", sizes[i]);
		umcg_arg_init(variant, self->buf, variant->ver0);
		memcpy((char *)self->buf + offsetof(struct umcg_arg_head, size),
		       &(__u32){ sizes[i] }, sizeof(__u32));
		umcg_expect(_metadata,
			    ioctl(self->fd,
				  umcg_cmd_sized(variant->cmd, sizes[i]),
				  self->buf),
			    ENOTTY, what);
	}
}

TEST_F(umcg_cmd, wrong_direction)
{
	unsigned int dir = _IOC_DIR(variant->cmd);
	char what[64];
	int n = 0;

	for (unsigned int d = _IOC_NONE; d <= (_IOC_READ | _IOC_WRITE); d++) {
		if (d == dir)
			continue;
		snprintf(what, sizeof(what), "dir %u", d);
		umcg_arg_init(variant, self->buf, variant->ver0);
		umcg_expect(_metadata,
			    ioctl(self->fd,
				  _IOC(d, _IOC_TYPE(variant->cmd),
				       _IOC_NR(variant->cmd), variant->ver0),
				  self->buf),
			    ENOTTY, what);
		n++;
	}
	ASSERT_EQ(3, n);
}

TEST_F(umcg_cmd, wrong_type)
{
	const unsigned int types[] = {
		0x00, UMCG_IOC_MAGIC - 1, UMCG_IOC_MAGIC + 1, 0xff,
	};
	char what[64];

	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		snprintf(what, sizeof(what), "type %#x", types[i]);
		umcg_arg_init(variant, self->buf, variant->ver0);
		umcg_expect(_metadata,
			    ioctl(self->fd,
				  _IOC(_IOC_DIR(variant->cmd), types[i],
				       _IOC_NR(variant->cmd), variant->ver0),
				  self->buf),
			    ENOTTY, what);
	}
}

/*
 * The module reads exactly _IOC_SIZE(cmd) bytes: an argument that ends at
 * an unmapped page works, one byte more faults.
 */
TEST_F(umcg_cmd, bad_pointer)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t usize = variant->ver0 + 8;
	unsigned char *map, *arg;

	umcg_expect(_metadata, ioctl(self->fd, variant->cmd, NULL), EFAULT,
		    "NULL");

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));

	arg = map + page - variant->ver0;
	umcg_arg_init(variant, arg, variant->ver0);
	umcg_expect(_metadata, ioctl(self->fd, variant->cmd, arg),
		    variant->err, "VER0 argument at the end of a page");
	umcg_cmd_undo(_metadata, variant, self->fd);

	arg = map + page - variant->ver0 - 4;
	umcg_arg_init(variant, arg, variant->ver0 + 4);
	((struct umcg_arg_head *)arg)->size = usize;
	umcg_expect(_metadata,
		    ioctl(self->fd, umcg_cmd_sized(variant->cmd, usize), arg),
		    EFAULT, "argument running into an unmapped page");

	EXPECT_EQ(0, munmap(map, 2 * page));
}

TEST_HARNESS_MAIN
