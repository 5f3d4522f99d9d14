// SPDX-License-Identifier: GPL-2.0
/*
 * Description: kmod_kill's execve() and file-release variants (see
 * kmod_kill.c): a child whose threads sit in the module's states calls
 * execve() from its unmanaged thread or from a RUNNING worker, or closes
 * and unmaps its /dev/umcg file; the new image must run, held workers must
 * run on unmanaged, and the module must empty and unload.
 */
#define UMCG_KILL_EXEC 1
#include "kmod_kill.c"
