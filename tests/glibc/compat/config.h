/* tests/glibc/compat/config.h - stand-in for glibc's generated config.h. The tests that include it
   only test feature macros; the installed glibc is the one under test, so nothing is configured. */
#ifndef LOCKLAB_COMPAT_CONFIG_H
#define LOCKLAB_COMPAT_CONFIG_H
#endif
