/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/peer_cxx.h - the C entry points of the peers that are not written in C (the C++
 * adapters peer_tbb.cc and peer_absl.cc, and the Rust crate peers/rust), shared by those
 * implementations and by lab/adapters/peer_ops.c, which wraps them in struct lab_lock_ops.
 *
 * Every peer lock lives in a zeroed block of LAB_PEER_STATE bytes aligned to LAB_PEER_ALIGN that the
 * lab allocates and never moves; init constructs the peer's object in place at offset 0 and
 * destroy destroys it in place. The verbs follow lab_lock_ops (lab/lab.h): init returns 0 or an
 * errno value; lock blocks until held (acquire semantics); trylock returns 0 (held, acquire
 * semantics) or EBUSY (no effect); unlock (release semantics) must come from the thread that locked.
 * The ordering itself is each peer library's own (see the per-adapter comments).
 */
#ifndef LOCKLAB_PEER_CXX_H
#define LOCKLAB_PEER_CXX_H

#include <stddef.h>

#define LAB_PEER_STATE 64	/* bytes per peer lock: one cache line, like the lab's own locks */
#define LAB_PEER_ALIGN 64

#ifdef __cplusplus
extern "C" {
#endif

#define LAB_PEER_VERBS(p)			\
	int p##_init(void *l);			\
	void p##_destroy(void *l);		\
	void p##_lock(void *l);			\
	int p##_trylock(void *l);		\
	void p##_unlock(void *l);

LAB_PEER_VERBS(lab_tbb_spin)		/* peer_tbb.cc: tbb::spin_mutex */
LAB_PEER_VERBS(lab_tbb_queuing)		/* peer_tbb.cc: tbb::queuing_mutex, thread-local nodes */
LAB_PEER_VERBS(lab_absl)		/* peer_absl.cc: absl::Mutex */
LAB_PEER_VERBS(lab_rust_std)		/* peers/rust: std::sync::Mutex<()> */
LAB_PEER_VERBS(lab_rust_pl)		/* peers/rust: parking_lot::RawMutex */

/* peers/rust: the Rust objects' size and alignment, checked against the block at init. */
size_t lab_rust_std_size(void);
size_t lab_rust_std_align(void);
size_t lab_rust_pl_size(void);
size_t lab_rust_pl_align(void);

#ifdef __cplusplus
}
#endif

#endif /* LOCKLAB_PEER_CXX_H */
