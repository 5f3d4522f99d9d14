// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * policy.c - the built-in policies by name.
 */
#include <string.h>

#include "internal.h"

const struct umcg_policy_ops *umcg_policy_find(const char *name)
{
	static const struct umcg_policy_ops *const all[] = {
		&umcg_policy_steal, &umcg_policy_fifo, &umcg_policy_pinned,
	};

	for (unsigned int i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, all[i]->name))
			return all[i];
	return NULL;
}
