// Global snapshots, a rule of --schedule-allocation (schedule_allocation.h).
#ifndef KILN_COMPILER_TRANSFORMS_GLOBAL_SNAPSHOTS_H_
#define KILN_COMPILER_TRANSFORMS_GLOBAL_SNAPSHOTS_H_

#include <set>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::transforms {

// A util.global.load is a view of the global's buffer unless the global is
// stored to while the loaded value (or a value tied to it or sliced from
// it) may still be read: every store of the global (and every func.call,
// whose callee may store it) must follow the load in its block, and every
// read of the loaded value must come before the first of those (or be
// that store). Otherwise the load copies the global into storage of its
// own (a snapshot).
// Returns the results of the util.global.load ops of `func` that need a
// snapshot.
std::set<ir::Value*> GlobalSnapshots(ir::Operation* func);

// Sets each util.global.load's `size` to its global's byte size (the
// util.global's `size`), which the load's storage (a view of the global, or
// a snapshot) is sized by; run by --schedule-allocation before it plans.
// Errors (kInvalidArgument): a load or store naming no util.global, a
// global without a positive `size`.
Status SizeGlobalLoads(ir::Module& module);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_GLOBAL_SNAPSHOTS_H_
