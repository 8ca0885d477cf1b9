/* SPDX-License-Identifier: MIT */
#include "locklab/version.h"

#define LK_STR2(x) #x
#define LK_STR(x) LK_STR2(x)

const char *lk_version(void)
{
	return LK_STR(LK_VERSION_MAJOR) "." LK_STR(LK_VERSION_MINOR) "." LK_STR(LK_VERSION_PATCH);
}
