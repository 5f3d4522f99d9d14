// SPDX-License-Identifier: GPL-2.0
/*
 * task.c - registration of the calling thread in its process's group, and
 * the lookups of a registered slot by task (the hook, and a thread's own
 * slot) and by tid (WAKE, SWITCH, PREEMPT).
 *
 * Lock order: umcg_group.lock, then umcg_hook_lock, the xa_lock of
 * umcg_group.tids, umcg_group.hash_lock or umcg_group.server_lock (one at
 * a time); umcg_group.hash_lock, then umcg_group_hash_lock (raw
 * spinlocks, the hook takes both at a worker's last schedule).
 *
 * A thread registers only itself.  A thread that exits without
 * unregistering keeps its slot until a later REGISTER finds its struct pid
 * without a task and its word off DONE (the process has read the exit the
 * kernel reported) and reclaims it, or until the group is freed; its slot
 * leaves its group's task hash earlier, at its last schedule, where the
 * hook sees that (hook.c).  A slot with a task work still queued is not
 * reused (its callback checks that the slot's task is still the one it
 * runs in).
 *
 * Lookups by task, two levels, each one bucket: umcg_group_hash holds the
 * groups that have a slot in their task hash, keyed by the thread group
 * they were bound in (current->signal, which a thread keeps across
 * execve() and until it is freed, after its last schedule: an exiting
 * thread that has dropped its mm is still found); each group's task hash
 * (UMCG_TASK_HASH_BITS, allocated at bind) holds its registered slots
 * keyed by task_struct address.  A task of a process with no group reads
 * one bucket of groups, whatever the number of workers (or of groups)
 * others have registered; only threads of a process with a group walk a
 * bucket of its slots.  The task hash starts small and is replaced by one
 * four times bigger when it holds more than two slots a bucket
 * (umcg_task_hash_grow(), at REGISTER): under umcg_group.hash_lock, inside
 * umcg_group.hash_seq's write section, every node moves to the new table,
 * which is then published; the old one is freed after a grace period.  A
 * lock-free lookup that misses while the seqcount moved retries (it may
 * have followed a moved node into the new table); one that finds its
 * task's slot is right whatever happened meanwhile.  Each fact has one place: a slot is registered in
 * the task hash while its thread may still schedule, a group is in
 * umcg_group_hash while its task hash is not empty (@nr_hashed counts its
 * entries, under the same lock).
 *
 * Readers: umcg_slot_of_task() walks RCU hash lists and
 * umcg_slot_of_tid() loads from an xarray, both without a lock; a slot they
 * return belongs to a group that lives at least until the end of their
 * read-side section (group.c), but may be unregistered or reused
 * meanwhile, so callers re-check what they rely on.  Writers hold
 * umcg_group.lock (and umcg_group.hash_lock for the task hash, with
 * umcg_group_hash_lock inside it when the group comes or goes), except the
 * hook's unhash at a thread's last schedule, which holds the two spinlocks
 * only.  A slot's hash node is not added to the task hash again until a
 * grace period after it left (umcg_slot_gp_wait()): a reader still on the
 * node would otherwise follow it into another bucket and miss the rest of
 * its own (a spurious "not registered").  A group's node always goes back
 * into the same bucket and needs no such wait.  The xarray has no such
 * hazard: the entry of a live thread's tid stays in place while other
 * entries come and go.
 *
 * Finding a slot for REGISTER is O(1): a freed slot waits on
 * umcg_group.gp_slots (in the order they were freed) until the grace
 * period its hash node needs ended, then on umcg_group.free_slots, most
 * recently freed first; REGISTER takes the first free one and allocates a
 * new chunk only when there is none (at max_tasks it waits for the oldest
 * grace period instead).  Slots
 * of threads that exited registered are found by a sweep of
 * UMCG_REAP_BATCH slots per REGISTER that goes round the group, and by a
 * full sweep before -ENOSPC.
 */
#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "umcg_internal.h"
#include "umcg_trace.h"

/*
 * The groups whose task hash holds a slot, keyed by the thread group
 * (signal_struct) they were bound in: what the hook looks in first, so
 * that a task of a process with no group pays one bucket of groups, and
 * never a walk of anybody's threads.  A group leaves when its last slot
 * leaves its task hash and may come back later: always in the same
 * bucket (its key is constant), so no grace period is needed before it
 * is added again (a reader still on its node goes on in the same
 * bucket).  A raw spinlock: the hook takes it, preemption off.
 */
static DEFINE_HASHTABLE(umcg_group_hash, 10);
static DEFINE_RAW_SPINLOCK(umcg_group_hash_lock);

/* Slots REGISTER looks at for a dead thread each time. */
#define UMCG_REAP_BATCH		16
/* Free slots REGISTER looks at for one whose grace period is over. */
#define UMCG_FREE_PROBES	8

/* @tsk's bucket of task hash table @tbl. */
static __always_inline struct hlist_head *
umcg_task_bucket(struct umcg_task_table *tbl, struct task_struct *tsk)
{
	return &tbl->heads[hash_ptr(tsk, tbl->bits)];
}

/*
 * The slot of @tsk in @grp's task hash, or NULL; adds the entries it
 * examined to *@seen.  Caller in an RCU (or RCU-sched) read-side section.
 */
static __always_inline struct umcg_slot *
umcg_group_slot_of(struct umcg_group *grp, struct task_struct *tsk,
		   unsigned int *seen)
{
	struct umcg_task_table *tbl;
	struct umcg_slot *slot;
	unsigned int seq;

	do {
		seq = raw_read_seqcount_begin(&grp->hash_seq);
		tbl = rcu_dereference_raw(grp->task_hash);
		hlist_for_each_entry_rcu_notrace(slot,
						 umcg_task_bucket(tbl, tsk),
						 task_node) {
			(*seen)++;
			if (READ_ONCE(slot->task) == tsk)
				return slot;
		}
	} while (read_seqcount_retry(&grp->hash_seq, seq));
	return NULL;
}

/*
 * The registered slot of @tsk, or NULL: the hook's lookup.  One bucket of
 * umcg_group_hash, then, in each group of @tsk's thread group, one bucket
 * of its task hash.  A thread that kept a /dev/umcg file across execve()
 * may be registered in its old group too (the same thread group): the
 * slot of the group bound to its current mm comes first.  Adds the
 * entries it examined to *@seen.  Caller in an RCU (or RCU-sched, i.e.
 * preemption disabled) read-side section.
 */
notrace struct umcg_slot *umcg_slot_of_task(struct task_struct *tsk,
					    unsigned int *seen)
{
	struct signal_struct *sig = tsk->signal;
	struct umcg_slot *slot, *found = NULL;
	struct umcg_group *grp;

	hash_for_each_possible_rcu_notrace(umcg_group_hash, grp, hash_node,
					   (unsigned long)sig) {
		(*seen)++;
		if (grp->signal != sig)
			continue;
		slot = umcg_group_slot_of(grp, tsk, seen);
		if (!slot)
			continue;
		if (READ_ONCE(grp->mm) == tsk->mm)
			return slot;
		found = slot;
	}
	return found;
}

/* The slot of current in @grp, or NULL.  Caller under rcu_read_lock(). */
struct umcg_slot *umcg_slot_of_current(struct umcg_group *grp)
{
	unsigned int seen = 0;

	return umcg_group_slot_of(grp, current, &seen);
}

/*
 * The slot of the live thread of @grp whose tid is @tid, or NULL.  Caller
 * under rcu_read_lock().
 */
struct umcg_slot *umcg_slot_of_tid(struct umcg_group *grp, u32 tid)
{
	struct umcg_slot *slot = xa_load(&grp->tids, tid);
	struct pid *pid;

	if (!slot)
		return NULL;
	pid = READ_ONCE(slot->pid);
	/* A dead thread's tid may be someone else's by now. */
	if (READ_ONCE(slot->tid) == tid && pid &&
	    pid_has_task(pid, PIDTYPE_PID))
		return slot;
	return NULL;
}

/*
 * Move @grp's task hash to a table four times bigger if it holds more
 * than two slots a bucket.  grp->lock held (no other writer adds).  If
 * the allocation fails the old table stays: slower, still right.
 */
static void umcg_task_hash_grow(struct umcg_group *grp)
{
	struct umcg_task_table *old, *new;
	struct umcg_slot *slot;
	struct hlist_node *tmp;
	unsigned int bits, i;

	old = rcu_dereference_protected(grp->task_hash,
					lockdep_is_held(&grp->lock));
	if (READ_ONCE(grp->nr_hashed) < 2U << old->bits ||
	    old->bits >= UMCG_TASK_HASH_MAX_BITS)
		return;
	bits = min(old->bits + 2, (unsigned int)UMCG_TASK_HASH_MAX_BITS);
	new = kvzalloc(struct_size(new, heads, 1U << bits), GFP_KERNEL_ACCOUNT);
	if (!new)
		return;
	new->bits = bits;

	raw_spin_lock_irq(&grp->hash_lock);
	write_seqcount_begin(&grp->hash_seq);
	for (i = 0; i < 1U << old->bits; i++) {
		hlist_for_each_entry_safe(slot, tmp, &old->heads[i],
					  task_node) {
			hlist_del_rcu(&slot->task_node);
			hlist_add_head_rcu(&slot->task_node,
					   umcg_task_bucket(new, slot->task));
		}
	}
	rcu_assign_pointer(grp->task_hash, new);
	write_seqcount_end(&grp->hash_seq);
	raw_spin_unlock_irq(&grp->hash_lock);
	kvfree_rcu(old, rcu);
}

/*
 * Hash @slot, current's new registration, into its group's task hash,
 * and the group into umcg_group_hash if it is its first.  grp->lock held.
 */
static void umcg_slot_hash_task(struct umcg_group *grp,
				struct umcg_slot *slot)
{
	umcg_task_hash_grow(grp);
	raw_spin_lock_irq(&grp->hash_lock);
	hlist_add_head_rcu(&slot->task_node,
			   umcg_task_bucket(rcu_dereference_protected(grp->task_hash,
					    lockdep_is_held(&grp->hash_lock)),
					    current));
	if (!grp->nr_hashed++) {
		raw_spin_lock(&umcg_group_hash_lock);
		hash_add_rcu(umcg_group_hash, &grp->hash_node,
			     (unsigned long)grp->signal);
		raw_spin_unlock(&umcg_group_hash_lock);
	}
	raw_spin_unlock_irq(&grp->hash_lock);
}

/*
 * Take @slot out of its group's task hash (if it is there), and the
 * group out of umcg_group_hash if it was its last.  Any context.
 */
notrace void umcg_slot_unhash_task(struct umcg_slot *slot)
{
	struct umcg_group *grp = slot->grp;
	unsigned long flags;

	raw_spin_lock_irqsave(&grp->hash_lock, flags);
	if (!hlist_unhashed(&slot->task_node)) {
		hlist_del_init_rcu(&slot->task_node);
		slot->gp = get_state_synchronize_rcu();
		slot->gp_wait = true;
		if (!--grp->nr_hashed) {
			raw_spin_lock(&umcg_group_hash_lock);
			hash_del_rcu(&grp->hash_node);
			raw_spin_unlock(&umcg_group_hash_lock);
		}
	}
	raw_spin_unlock_irqrestore(&grp->hash_lock, flags);
}

/* Has the grace period @slot's hash node waits for ended?  grp->lock held. */
static bool umcg_slot_gp_done(struct umcg_slot *slot)
{
	bool done;

	raw_spin_lock_irq(&slot->grp->hash_lock);
	done = !slot->gp_wait || poll_state_synchronize_rcu(slot->gp);
	if (done)
		slot->gp_wait = false;
	raw_spin_unlock_irq(&slot->grp->hash_lock);
	return done;
}

/* Wait for the end of that grace period.  grp->lock held. */
static void umcg_slot_gp_wait(struct umcg_slot *slot)
{
	unsigned long gp;

	raw_spin_lock_irq(&slot->grp->hash_lock);
	gp = slot->gp;
	if (!slot->gp_wait) {
		raw_spin_unlock_irq(&slot->grp->hash_lock);
		return;
	}
	raw_spin_unlock_irq(&slot->grp->hash_lock);
	cond_synchronize_rcu(gp);
	umcg_slot_gp_done(slot);
}

/* References a freed slot held, dropped after an RCU grace period. */
struct umcg_slot_refs {
	struct rcu_head		rcu;
	struct task_struct	*task;
	struct pid		*pid;
};

static void umcg_slot_refs_put(struct rcu_head *rcu)
{
	struct umcg_slot_refs *refs = container_of(rcu, struct umcg_slot_refs,
						   rcu);

	put_task_struct(refs->task);
	put_pid(refs->pid);
	kfree(refs);
}

/*
 * Unregister @slot's thread.  grp->lock held (or the group is dying).
 * Lock-free readers may still look at the slot's task and pid, so those
 * references are dropped after a grace period (module exit waits for
 * them with rcu_barrier()).
 */
void umcg_slot_free(struct umcg_group *grp, struct umcg_slot *slot)
{
	struct umcg_slot_refs *refs;
	unsigned int i;

	trace_umcg_exit(slot, true);
	refs = kmalloc(sizeof(*refs), GFP_KERNEL_ACCOUNT);
	umcg_slot_unhash_task(slot);
	/* Unless a new thread with its tid took the entry meanwhile. */
	xa_cmpxchg(&grp->tids, slot->tid, slot, NULL, 0);

	if (slot->flags == UMCG_REGISTER_SERVER) {
		spin_lock(&grp->server_lock);
		slot->srv_listed = false;
		for (i = 0; i < grp->nr_servers; i++) {
			if (grp->servers[i] != slot->idx)
				continue;
			memmove(&grp->servers[i], &grp->servers[i + 1],
				(grp->nr_servers - i - 1) *
				sizeof(grp->servers[0]));
			grp->nr_servers--;
			break;
		}
		spin_unlock(&grp->server_lock);
	} else {
		atomic_dec(&umcg_nr_workers);
		umcg_hook_put();
	}

	if (refs) {
		refs->task = slot->task;
		refs->pid = slot->pid;
	} else {
		synchronize_rcu();
		put_task_struct(slot->task);
		put_pid(slot->pid);
	}
	WRITE_ONCE(slot->task, NULL);
	WRITE_ONCE(slot->pid, NULL);
	if (refs)
		call_rcu(&refs->rcu, umcg_slot_refs_put);
	slot->flags = 0;
	slot->tid = 0;
	slot->cpu = 0;
	/* Unlocked: the hook cannot hash or unhash a slot without a task. */
	if (READ_ONCE(slot->gp_wait))
		list_add_tail(&slot->free_node, &grp->gp_slots);
	else
		list_add(&slot->free_node, &grp->free_slots);
	grp->nr_tasks--;
	atomic_dec(&umcg_nr_tasks);
}

/*
 * Is @slot's thread gone for good: reaped, and past its last schedule?
 * A thread is unhashed from its pid before that schedule, in which the
 * hook may still move its word to DONE; on_cpu drops (release) only once
 * the thread was switched away from for the last time.
 */
static bool umcg_slot_dead(struct umcg_slot *slot)
{
	struct task_struct *tsk = slot->task;

	return !pid_has_task(slot->pid, PIDTYPE_PID) &&
	       READ_ONCE(tsk->__state) == TASK_DEAD &&
	       !smp_load_acquire(&tsk->on_cpu);
}

/*
 * Free @slot if its thread is gone and the process no longer reads its
 * word: one that reads DONE (the exit as the kernel reported it) stays
 * until the process stores another state there.  grp->lock held.
 */
static void umcg_slot_reap(struct umcg_group *grp, struct umcg_slot *slot)
{
	if (slot->task && umcg_slot_dead(slot) &&
	    umcg_state_of(READ_ONCE(umcg_task_of(slot)->state)) !=
	    UMCG_TASK_DONE)
		umcg_slot_free(grp, slot);
}

/*
 * Look at @n slots of @grp (all of them if @n is 0) from where the last
 * sweep stopped, freeing those of dead threads.  grp->lock held.
 */
static void umcg_reap_sweep(struct umcg_group *grp, unsigned int n)
{
	unsigned int nr = min_t(u64, (u64)grp->nr_chunks * UMCG_SLOTS_PER_CHUNK,
				grp->max_tasks);
	unsigned int i;

	if (!nr)
		return;
	if (!n || n > nr)
		n = nr;
	for (i = 0; i < n; i++) {
		if (grp->reap_pos >= nr)
			grp->reap_pos = 0;
		umcg_slot_reap(grp, umcg_slot_at(grp, grp->reap_pos++));
	}
}

/*
 * Is there a live server of @grp whose tid is @tid?  One that died
 * registered is reaped here if it can be, and is no server either way.
 * grp->lock held.
 */
static bool umcg_server_find(struct umcg_group *grp, u32 tid)
{
	struct umcg_slot *s = xa_load(&grp->tids, tid);

	if (!s || !s->srv_listed || s->tid != tid)
		return false;
	umcg_slot_reap(grp, s);
	return s->task && pid_has_task(s->pid, PIDTYPE_PID);
}

/*
 * Room in grp->servers[] for one more.  grp->lock held (the only writer);
 * the pokers read the array under server_lock.
 */
static int umcg_servers_reserve(struct umcg_group *grp)
{
	unsigned int cap = max(16U, grp->servers_cap * 2);
	u32 *new, *old;

	if (grp->nr_servers < grp->servers_cap)
		return 0;
	new = kvmalloc_array(cap, sizeof(*new), GFP_KERNEL_ACCOUNT);
	if (!new)
		return -ENOMEM;
	spin_lock(&grp->server_lock);
	old = grp->servers;
	if (old)
		memcpy(new, old, grp->nr_servers * sizeof(*new));
	grp->servers = new;
	grp->servers_cap = cap;
	spin_unlock(&grp->server_lock);
	kvfree(old);
	return 0;
}

/*
 * Slots freed from now on wait on grp->gp_slots, oldest first, while
 * lock-free readers may still be on their hash node; move those whose
 * grace period ended to the front of grp->free_slots.  grp->lock held.
 */
static void umcg_gp_slots_ready(struct umcg_group *grp)
{
	struct umcg_slot *s;

	while ((s = list_first_entry_or_null(&grp->gp_slots, struct umcg_slot,
					     free_node)) &&
	       umcg_slot_gp_done(s))
		list_move(&s->free_node, &grp->free_slots);
}

/*
 * A free slot of @grp for a registration: the first of UMCG_FREE_PROBES
 * on grp->free_slots (most recently freed first: the area stays compact
 * and its cache lines warm) with no task work queued; else a new chunk's
 * first slot; else, at max_tasks, after sweeping every slot for dead
 * threads, the oldest of those waiting for their grace period.
 * grp->lock held.  Return: the slot; ERR_PTR(-ENOSPC), ERR_PTR(-ENOMEM).
 */
static struct umcg_slot *umcg_slot_get(struct umcg_group *grp)
{
	struct umcg_slot *s;
	bool swept = false;
	unsigned int n;
	int ret;

again:
	umcg_gp_slots_ready(grp);
	n = 0;
	list_for_each_entry(s, &grp->free_slots, free_node) {
		if (!READ_ONCE(s->work_bits))
			goto found;
		if (++n >= UMCG_FREE_PROBES && !swept)
			break;
	}
	ret = umcg_group_grow(grp);
	if (!ret) {
		/* The new chunk's first slot, first on the list. */
		s = list_first_entry(&grp->free_slots, struct umcg_slot,
				     free_node);
		goto found;
	}
	if (ret != -ENOSPC)
		return ERR_PTR(ret);
	if (!swept) {
		/* Full: the slots of threads that died registered. */
		umcg_reap_sweep(grp, 0);
		swept = true;
		goto again;
	}
	list_for_each_entry(s, &grp->gp_slots, free_node) {
		if (!READ_ONCE(s->work_bits)) {
			umcg_slot_gp_wait(s);
			goto found;
		}
	}
	return ERR_PTR(-ENOSPC);
found:
	list_del_init(&s->free_node);
	return s;
}

static int umcg_args_check(struct umcg_group *grp,
			   const struct umcg_register_args *args)
{
	if (args->flags == UMCG_REGISTER_SERVER) {
		if (args->server_tid)
			return -EINVAL;
		if (args->cpu >= nr_cpu_ids || !cpu_possible(args->cpu))
			return -EINVAL;
		return 0;
	}
	if (args->cpu)
		return -EINVAL;
	if (args->server_tid && !umcg_server_find(grp, args->server_tid))
		return -ESRCH;
	return 0;
}

/*
 * Register the calling thread as args->flags says; its struct umcg_task
 * is zeroed and its offset in the
 * mapping stored in @task_off.
 *
 * Return: 0; -EPERM (not the group's process); -EBUSY (already registered,
 * or the process has a group on another file); -EINVAL (server_tid of a
 * server, cpu of a worker, impossible cpu of a server); -ESRCH (a worker's
 * server_tid is no server of the group); -ENOSPC (the file's max_tasks
 * threads registered); -ENOMEM.
 */
int umcg_task_add(struct umcg_group *grp,
		  const struct umcg_register_args *args, u64 *task_off)
{
	bool worker = args->flags == UMCG_REGISTER_WORKER;
	struct umcg_slot *slot;
	struct umcg_task *task;
	bool mine;
	void *old;
	int ret;

	/* Before the registration: the worker's first block is seen. */
	if (worker) {
		ret = umcg_hook_get();
		if (ret)
			return ret;
	}
	mutex_lock(&grp->lock);
	ret = umcg_group_bind(grp);
	if (ret)
		goto out;

	rcu_read_lock();
	mine = umcg_slot_of_current(grp);
	rcu_read_unlock();
	if (mine) {
		ret = -EBUSY;
		goto out;
	}
	ret = umcg_args_check(grp, args);
	if (ret)
		goto out;
	if (!worker) {
		ret = umcg_servers_reserve(grp);
		if (ret)
			goto out;
	}
	umcg_reap_sweep(grp, UMCG_REAP_BATCH);
	slot = umcg_slot_get(grp);
	if (IS_ERR(slot)) {
		ret = PTR_ERR(slot);
		goto out;
	}
	/* Room for the tid's entry before anything is published. */
	ret = xa_insert(&grp->tids, task_pid_vnr(current), XA_ZERO_ENTRY,
			GFP_KERNEL_ACCOUNT);
	if (ret == -EBUSY)
		ret = 0;	/* a dead thread's, replaced below */
	if (ret) {
		list_add(&slot->free_node, &grp->free_slots);
		goto out;
	}

	task = umcg_task_of(slot);
	memset(task, 0, sizeof(*task));
	slot->flags = args->flags;
	slot->in_wait = false;
	slot->rehold = false;
	slot->tid = task_pid_vnr(current);
	slot->cpu = args->cpu;
	slot->pid = get_pid(task_pid(current));
	get_task_struct(current);
	/*
	 * Readers that reach a slot by index, not through a hash (kmove.c:
	 * the staged worker, PREEMPT's target), load @task with acquire:
	 * they then see this registration's pid, flags and zeroed word.
	 */
	smp_store_release(&slot->task, current);
	grp->nr_tasks++;
	atomic_inc(&umcg_nr_tasks);

	/* Cannot fail: the entry exists (a reserved or a dead one). */
	old = xa_store(&grp->tids, slot->tid, slot, GFP_KERNEL_ACCOUNT);
	WARN_ON_ONCE(xa_is_err(old));
	if (worker) {
		atomic_inc(&umcg_nr_workers);
		worker = false;	/* the slot holds the hook reference now */
	} else {
		spin_lock(&grp->server_lock);
		grp->servers[grp->nr_servers++] = slot->idx;
		slot->srv_listed = true;
		spin_unlock(&grp->server_lock);
	}
	umcg_slot_hash_task(grp, slot);
	trace_umcg_register(slot);

	*task_off = (u64)slot->idx * sizeof(struct umcg_task);
out:
	mutex_unlock(&grp->lock);
	if (worker)
		umcg_hook_put();
	return ret;
}

/*
 * Unregister the calling thread.
 *
 * Return: 0; -EPERM (the group belongs to another process); -ENOENT (the
 * caller is not registered).
 */
int umcg_task_del(struct umcg_group *grp)
{
	struct umcg_slot *s = NULL;
	int ret = -ENOENT;

	mutex_lock(&grp->lock);
	if (grp->mm && !umcg_group_owned(grp)) {
		ret = -EPERM;
		goto out;
	}
	if (grp->mm) {
		rcu_read_lock();
		s = umcg_slot_of_current(grp);
		rcu_read_unlock();
	}
	/* Only current frees its own live slot: still its own. */
	if (s && s->task == current) {
		umcg_slot_free(grp, s);
		ret = 0;
	}
out:
	mutex_unlock(&grp->lock);
	return ret;
}
