/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmod_raw.h - raw-ioctl helpers of the umcg.ko guest tests that drive
 * threads through the kernel moves by hand (kmod_ioctl_table, kmod_kill,
 * kmod_register, kmod_wait):
 * every call is one ioctl or one access to the shared area, no libumcg.
 * Include after kmod_test.h.
 *
 * The ioctl wrappers return 0 or -errno and never touch errno-sensitive
 * state otherwise.  None of them sleeps in user space, and none allocates,
 * so a worker whose state word reads RUNNING may call them (a sleep there
 * would be a block the kernel reports).
 */
#ifndef UMCG_KMOD_RAW_H
#define UMCG_KMOD_RAW_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <uapi/umcg.h>

#define UMCG_MS		1000000ULL

static inline pid_t umcg_gettid(void)
{
	return syscall(SYS_gettid);
}

static inline int umcg_reg(int fd, __u32 flags, __u32 server_tid, __u32 cpu,
			   __u64 *task_off)
{
	struct umcg_register_args a = {
		.size = sizeof(a),
		.flags = flags,
		.server_tid = server_tid,
		.cpu = cpu,
		.task_off = ~0ULL,	/* written by the kernel only */
	};

	if (ioctl(fd, UMCG_IOC_REGISTER, &a))
		return -errno;
	if (task_off)
		*task_off = a.task_off;
	return 0;
}

static inline int umcg_unreg(int fd)
{
	struct umcg_unregister_args a = { .size = sizeof(a) };

	return ioctl(fd, UMCG_IOC_UNREGISTER, &a) ? -errno : 0;
}

static inline int umcg_wait(int fd, __u32 flags, __u64 timeout_ns)
{
	struct umcg_wait_args a = {
		.size = sizeof(a),
		.flags = flags,
		.timeout_ns = timeout_ns,
	};

	return ioctl(fd, UMCG_IOC_WAIT, &a) ? -errno : 0;
}

static inline int umcg_wake(int fd, __u32 tid)
{
	struct umcg_wake_args a = { .size = sizeof(a), .tid = tid };

	return ioctl(fd, UMCG_IOC_WAKE, &a) ? -errno : 0;
}

static inline int umcg_switch(int fd, __u32 next_tid, __u32 flags,
			      __u64 timeout_ns)
{
	struct umcg_switch_args a = {
		.size = sizeof(a),
		.flags = flags,
		.next_tid = next_tid,
		.timeout_ns = timeout_ns,
	};

	return ioctl(fd, UMCG_IOC_SWITCH, &a) ? -errno : 0;
}

static inline int umcg_preempt(int fd, __u32 tid)
{
	struct umcg_preempt_args a = { .size = sizeof(a), .tid = tid };

	return ioctl(fd, UMCG_IOC_PREEMPT, &a) ? -errno : 0;
}

/* max_tasks of UMCG_IOC_GET_INFO, or -errno. */
static inline int umcg_max_tasks(int fd)
{
	struct umcg_info info = { .size = sizeof(info) };

	if (ioctl(fd, UMCG_IOC_GET_INFO, &info))
		return -errno;
	return info.max_tasks;
}

/* The one valid mapping length for @max_tasks. */
static inline size_t umcg_map_len(unsigned int max_tasks)
{
	return UMCG_MMAP_SIZE(max_tasks, sysconf(_SC_PAGESIZE));
}

/* The one valid mapping of @fd's shared area, or MAP_FAILED. */
static inline struct umcg_task *umcg_map(int fd, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    UMCG_MMAP_TASKS_OFF);
}

/* The event bitmap of a mapping of @max_tasks slots. */
static inline __u64 *umcg_events(struct umcg_task *map,
				 unsigned int max_tasks)
{
	return (__u64 *)((char *)map +
			 UMCG_MMAP_EVENTS_OFF(max_tasks,
					      sysconf(_SC_PAGESIZE)));
}

/* The event bitmap's summary (a bit per word) of that mapping. */
static inline __u64 *umcg_summary(struct umcg_task *map,
				  unsigned int max_tasks)
{
	return (__u64 *)((char *)map +
			 UMCG_MMAP_SUMMARY_OFF(max_tasks,
					       sysconf(_SC_PAGESIZE)));
}

/* Slot index of the struct umcg_task at @task_off. */
static inline unsigned int umcg_slot_idx(__u64 task_off)
{
	return task_off / sizeof(struct umcg_task);
}

static inline __u32 umcg_state_load(const struct umcg_task *t)
{
	return __atomic_load_n(&t->state, __ATOMIC_SEQ_CST);
}

static inline void umcg_state_store(struct umcg_task *t, __u32 state)
{
	__atomic_store_n(&t->state, state, __ATOMIC_SEQ_CST);
}

static inline bool umcg_event_test(__u64 *events, unsigned int idx)
{
	return __atomic_load_n(&events[idx / 64], __ATOMIC_SEQ_CST) &
	       (1ULL << (idx % 64));
}

/* Take (clear) slot @idx's event bit; true if it was set. */
static inline bool umcg_event_take(__u64 *events, unsigned int idx)
{
	return __atomic_fetch_and(&events[idx / 64], ~(1ULL << (idx % 64)),
				  __ATOMIC_SEQ_CST) & (1ULL << (idx % 64));
}

static inline __u64 umcg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void umcg_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Poll (1 ms steps) until (@cond) holds, at most @ms; the last value. */
#define umcg_poll_ms(cond, ms) ({					\
	bool __ok = (cond);						\
	for (long __i = 0; !__ok && __i < (ms); __i++) {		\
		umcg_sleep_ms(1);					\
		__ok = (cond);						\
	}								\
	__ok;								\
})

/* A scanf() of one number from /sys/class/misc/umcg/@name, or -1. */
static inline long umcg_sys_count(const char *name)
{
	char path[128];
	long v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/class/misc/" UMCG_DEVICE_NAME "/%s",
		 name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fscanf(f, "%ld", &v);
	fclose(f);
	return n == 1 ? v : -1;
}

/* The hook attribute ("tracepoint", "kprobe"), "" if unreadable. */
static inline const char *umcg_sys_hook(char *buf, size_t len)
{
	FILE *f = fopen("/sys/class/misc/" UMCG_DEVICE_NAME "/hook", "re");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* groups, tasks, workers and works all read 0. */
static inline bool umcg_sys_empty(void)
{
	return umcg_sys_count("groups") == 0 && umcg_sys_count("tasks") == 0 &&
	       umcg_sys_count("workers") == 0 && umcg_sys_count("works") == 0;
}

/* Unload umcg.ko, retrying (up to ~@ms) while it is still in use. */
static inline int umcg_unload_eventually(long ms)
{
	int ret = -1;

	for (long i = 0; i < ms / 10 + 1; i++) {
		ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
		if (ret != -UMCG_EINUSE)
			break;
		umcg_sleep_ms(10);
	}
	return ret;
}

/*
 * The scheduler state letter ('R', 'S', 'D', ...) of thread @tid of
 * process @pid (0: this one) in /proc, '?' if unknown.
 */
static inline char umcg_proc_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * What most fixtures hold: the module (loaded by this test or not), one
 * open /dev/umcg and its shared area mapped whole. 
 */
struct umcg_kmod_dev {
	int fd;
	bool loaded;
	unsigned int max_tasks;
	size_t len;
	struct umcg_task *map;
};

/* Load, open and map; SKIPs (fd stays -1) where umcg_kmod_get() does. */
static inline void umcg_kmod_dev_open(struct __test_metadata *_metadata,
				      struct umcg_kmod_dev *d)
{
	int max;

	d->fd = -1;
	d->map = MAP_FAILED;
	if (!umcg_kmod_get(_metadata, &d->loaded))
		return;
	d->fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, d->fd) TH_LOG("open: %s", strerror(errno));
	max = umcg_max_tasks(d->fd);
	ASSERT_LT(0, max);
	d->max_tasks = max;
	d->len = umcg_map_len(max);
	d->map = umcg_map(d->fd, d->len);
	ASSERT_NE(MAP_FAILED, d->map) TH_LOG("mmap: %s", strerror(errno));
}

/* Undo umcg_kmod_dev_open(), unloading the module if it loaded it. */
static inline void umcg_kmod_dev_close(struct __test_metadata *_metadata,
				       struct umcg_kmod_dev *d)
{
	if (d->map != MAP_FAILED)
		EXPECT_EQ(0, munmap(d->map, d->len));
	if (d->fd >= 0)
		EXPECT_EQ(0, close(d->fd));
	if (d->loaded)
		EXPECT_EQ(0, umcg_unload_eventually(10000));
}

#endif /* UMCG_KMOD_RAW_H */
