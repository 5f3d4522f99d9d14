// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kmod_probe.h"

int umcg_kmod_get_info(struct umcg_info *info)
{
	int fd, ret = 0;

	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, UMCG_IOC_GET_INFO, info) < 0)
		ret = -errno;
	close(fd);
	return ret;
}
