/* SPDX-License-Identifier: MIT */
/*
 * locklab/locklab.h - everything locklab offers, in one include. Each primitive also has its own
 * header (one algorithm per header), which is what the library's own sources include.
 */
#ifndef LOCKLAB_LOCKLAB_H
#define LOCKLAB_LOCKLAB_H

#include "locklab/version.h"
#include "locklab/relax.h"
#include "locklab/park.h"
#include "locklab/mutex.h"
#include "locklab/cond.h"
#include "locklab/lockref.h"
#include "locklab/refcount.h"
#include "locklab/spin_ttas.h"
#include "locklab/spin_ticket.h"
#include "locklab/spin_mcs.h"
#include "locklab/qspinlock.h"

#endif /* LOCKLAB_LOCKLAB_H */
