// SPDX-License-Identifier: MIT
//! peers/rust - Rust's two mainstream mutexes behind a C ABI, so locklab-bench can run them through
//! the same workloads as its own locks (lab/adapters/peer_rust.c wraps these in lab_lock_ops).
//!
//! Layout: the lab hands us `LAB_RUST_STATE_MAX` (64) zeroed, 64-byte-aligned bytes per lock and
//! never moves them. `lab_rust_*_init` constructs the Rust object in place (`ptr::write`),
//! `lab_rust_*_destroy` drops it in place; `lab_rust_*_size/_align` let the C side check at init
//! that the object fits (it does by a wide margin: 16 and 1 bytes on x86-64 Linux).
//!
//!   StdLock (std::sync::Mutex<()>, futex-based on Linux):
//!     +----------------------------+--------------------------------------------+
//!     | m: Mutex<()>  (futex word, | guard: Option<MutexGuard<'static, ()>>      |
//!     |    poison flag)            | written only by the holder, while held     |
//!     +----------------------------+--------------------------------------------+
//!   PlLock (parking_lot::RawMutex through lock_api::RawMutex):
//!     +-------------------------------+-----------------------------------------+
//!     | raw: RawMutex (1 byte: LOCKED | guard: the per-acquisition token lock() |
//!     |      and PARKED bits)         | returned (a ZST here), holder-only      |
//!     +-------------------------------+-----------------------------------------+
//!
//! Invariants:
//!  - `guard` is Some / initialised exactly while some thread holds the mutex, and only that thread
//!    reads or writes it. The holder stores it after lock() returns and takes it back before the
//!    unlock that releases the mutex, so every access is inside the critical section: the mutex's
//!    own acquire (in lock) and release (in unlock) order one holder's accesses before the next
//!    holder's. No extra atomics are needed.
//!  - std's Mutex has no C-style unlock: the only way to release it is to drop its MutexGuard, so
//!    the guard is kept (with its lifetime erased to 'static) in the lock it borrows from. That is
//!    sound because the C side never moves the state and destroys it only when unlocked.
//!  - Unlock must come from the thread that locked (the C contract of every lab lock). std's guard
//!    is !Send for that reason; we honour it by contract rather than by type.
//!  - Nothing here panics while a lock is held, so std's poisoning never triggers; should a
//!    poisoned lock appear anyway, lock() proceeds (into_inner) instead of unwinding into C.
//!    The crate is built with panic = "abort": no unwinding ever crosses the C ABI.
//!
//!   state diagram (both):   UNLOCKED --lock/trylock ok--> HELD(guard stored) --unlock--> UNLOCKED
//!                           UNLOCKED --trylock while HELD--> EBUSY, no change

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr;
use std::sync::{Mutex, MutexGuard, TryLockError};

use parking_lot::lock_api::RawMutex as RawMutexApi;

/// errno EBUSY: trylock found the lock held (Linux value, as <errno.h> defines it).
const EBUSY: c_int = 16;

// ---------------------------------------------------------------------------------------------
// std::sync::Mutex

struct StdLock {
	m: Mutex<()>,
	/// Holder-only: the guard of the current acquisition (None while unlocked).
	guard: UnsafeCell<Option<MutexGuard<'static, ()>>>,
}

/// Bytes the C side must reserve for a std lock.
#[no_mangle]
pub extern "C" fn lab_rust_std_size() -> usize {
	size_of::<StdLock>()
}

/// Alignment the C side must provide for a std lock.
#[no_mangle]
pub extern "C" fn lab_rust_std_align() -> usize {
	align_of::<StdLock>()
}

/// Constructs an unlocked std Mutex in place. Returns 0.
///
/// # Safety
/// `p` points to `lab_rust_std_size()` writable bytes aligned to `lab_rust_std_align()` that hold
/// no live lock.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_std_init(p: *mut c_void) -> c_int {
	ptr::write(
		p as *mut StdLock,
		StdLock {
			m: Mutex::new(()),
			guard: UnsafeCell::new(None),
		},
	);
	0
}

/// Drops the lock in place. The lock must be unlocked and no thread may use it afterwards.
///
/// # Safety
/// `p` was initialised by `lab_rust_std_init` and is not held.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_std_destroy(p: *mut c_void) {
	ptr::drop_in_place(p as *mut StdLock);
}

/// Erases the guard's borrow of the lock it lives in (see the module invariants).
unsafe fn std_store(s: &StdLock, g: MutexGuard<'_, ()>) {
	let g: MutexGuard<'static, ()> = std::mem::transmute(g);
	// Holder-only slot: we own the mutex from here until lab_rust_std_unlock takes the guard.
	*s.guard.get() = Some(g);
}

/// Blocks until the lock is held. Acquire semantics: the critical section cannot be observed
/// before the previous holder's release (std's futex mutex: acquiring CAS / swap).
///
/// # Safety
/// `p` was initialised by `lab_rust_std_init`; the calling thread does not already hold it.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_std_lock(p: *mut c_void) {
	let s = &*(p as *const StdLock);
	let g = s.m.lock().unwrap_or_else(|e| e.into_inner());
	std_store(s, g);
}

/// Takes the lock if free: 0 (acquired, acquire semantics as lock) or EBUSY (held, no effect).
///
/// # Safety
/// As `lab_rust_std_lock`.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_std_trylock(p: *mut c_void) -> c_int {
	let s = &*(p as *const StdLock);
	match s.m.try_lock() {
		Ok(g) => {
			std_store(s, g);
			0
		}
		Err(TryLockError::Poisoned(e)) => {
			std_store(s, e.into_inner());
			0
		}
		Err(TryLockError::WouldBlock) => EBUSY,
	}
}

/// Releases the lock (release semantics: the critical section is visible to the next holder).
///
/// # Safety
/// The calling thread holds the lock through lab_rust_std_lock/trylock.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_std_unlock(p: *mut c_void) {
	let s = &*(p as *const StdLock);
	// Holder-only slot, still inside the critical section; dropping the guard is the release.
	match (*s.guard.get()).take() {
		Some(g) => drop(g),
		None => {
			// Unlock of an unlocked lock: say so rather than silently carry on.
			eprintln!("locklab: rust_std: unlock of a lock that is not held");
			std::process::abort();
		}
	}
}

// ---------------------------------------------------------------------------------------------
// parking_lot::RawMutex

type PlRaw = parking_lot::RawMutex;
type PlGuard = <PlRaw as RawMutexApi>::Guard;

struct PlLock {
	raw: PlRaw,
	/// Holder-only: the token of the current acquisition (uninitialised while unlocked).
	guard: UnsafeCell<MaybeUninit<PlGuard>>,
}

/// Bytes the C side must reserve for a parking_lot lock.
#[no_mangle]
pub extern "C" fn lab_rust_pl_size() -> usize {
	size_of::<PlLock>()
}

/// Alignment the C side must provide for a parking_lot lock.
#[no_mangle]
pub extern "C" fn lab_rust_pl_align() -> usize {
	align_of::<PlLock>()
}

/// Constructs an unlocked parking_lot RawMutex in place. Returns 0.
///
/// # Safety
/// As `lab_rust_std_init`, with the pl sizes.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_pl_init(p: *mut c_void) -> c_int {
	ptr::write(
		p as *mut PlLock,
		PlLock {
			raw: <PlRaw as RawMutexApi>::INIT,
			guard: UnsafeCell::new(MaybeUninit::uninit()),
		},
	);
	0
}

/// Drops the lock in place (RawMutex has no destructor; kept for symmetry). Must be unlocked.
///
/// # Safety
/// `p` was initialised by `lab_rust_pl_init` and is not held.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_pl_destroy(p: *mut c_void) {
	ptr::drop_in_place(p as *mut PlLock);
}

/// Blocks until held (spins briefly, then parks in parking_lot's global hash table). Acquire
/// semantics: pairs with the previous holder's release in lab_rust_pl_unlock.
///
/// # Safety
/// `p` was initialised by `lab_rust_pl_init`; the calling thread does not already hold it.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_pl_lock(p: *mut c_void) {
	let s = &*(p as *const PlLock);
	let g = s.raw.lock();
	// Holder-only slot: written inside the critical section, read back by our own unlock.
	(*s.guard.get()).write(g);
}

/// Takes the lock if free: 0 (acquired, acquire semantics) or EBUSY (held, no effect).
///
/// # Safety
/// As `lab_rust_pl_lock`.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_pl_trylock(p: *mut c_void) -> c_int {
	let s = &*(p as *const PlLock);
	match s.raw.try_lock() {
		Some(g) => {
			(*s.guard.get()).write(g);
			0
		}
		None => EBUSY,
	}
}

/// Releases the lock (release semantics; parking_lot unparks one waiter if any is parked, and
/// every ~0.5 ms hands the lock over directly: its "eventual fairness").
///
/// # Safety
/// The calling thread holds the lock through lab_rust_pl_lock/trylock.
#[no_mangle]
pub unsafe extern "C" fn lab_rust_pl_unlock(p: *mut c_void) {
	let s = &*(p as *const PlLock);
	// Holder-only slot, initialised by our lock/trylock; read before the releasing unlock.
	let g = (*s.guard.get()).assume_init_read();
	s.raw.unlock(g);
}
