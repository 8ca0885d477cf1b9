/* tests/glibc/compat/glibc-compat.h - included first by every file of the standalone build: what
   glibc's own build passes on the command line (support/Makefile, Makeconfig). */
#ifndef LOCKLAB_COMPAT_GLIBC_COMPAT_H
#define LOCKLAB_COMPAT_GLIBC_COMPAT_H
#ifndef TIMEOUTFACTOR
#define TIMEOUTFACTOR 1		/* the TIMEOUTFACTOR environment variable scales it at run time */
#endif
#include <limits.h>
#ifndef NAME_MAX
#define NAME_MAX 255		/* glibc's internal <limits.h> provides it */
#endif
#endif
