/* tests/glibc/compat/libc-diag.h - stand-in for glibc's internal <libc-diag.h>: the diagnostic
   push/pop/ignore macros some tests wrap around deliberately questionable code. */
#ifndef LOCKLAB_COMPAT_LIBC_DIAG_H
#define LOCKLAB_COMPAT_LIBC_DIAG_H
#define _DIAG_STR1(s) #s
#define _DIAG_STR(s) _DIAG_STR1(s)
#define DIAG_PUSH_NEEDS_COMMENT _Pragma("GCC diagnostic push")
#define DIAG_PUSH_NEEDS_COMMENT_CLANG
#define DIAG_POP_NEEDS_COMMENT _Pragma("GCC diagnostic pop")
#define DIAG_POP_NEEDS_COMMENT_CLANG
#define DIAG_IGNORE_NEEDS_COMMENT(version, option) _Pragma(_DIAG_STR(GCC diagnostic ignored option))
#define DIAG_IGNORE_NEEDS_COMMENT_CLANG(version, option)
#define DIAG_IGNORE_Os_NEEDS_COMMENT(version, option)
#endif
