/* SPDX-License-Identifier: MIT */
/* locklab/version.h - the library's version, for programs that load it dynamically. */
#ifndef LOCKLAB_VERSION_H
#define LOCKLAB_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define LK_VERSION_MAJOR 0
#define LK_VERSION_MINOR 1
#define LK_VERSION_PATCH 0

/* The version of the library actually loaded, "MAJOR.MINOR.PATCH". */
const char *lk_version(void);

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_VERSION_H */
