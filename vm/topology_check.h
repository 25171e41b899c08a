// Run-time check of a module's device topology (schemas/kiln_module.fbs,
// table Topology; compiler/analysis/topology.h) against the HAL device.
//
// The compiler elides a transfer between two devices that the topology says
// share memory (a `unified` link): the runtime then maps the buffer instead
// of copying it. Such a module is only correct on a device whose
// device-local memory is host visible (hal::DeviceInfo::unified_memory).
// Modules compiled for `discrete` (every transfer is a real copy), or
// without a topology, run on any device.
//
// Called once when a module is added to a context, before anything runs.
// Cost: O(devices + links); no allocation unless an error is returned.
#ifndef KILN_VM_TOPOLOGY_CHECK_H_
#define KILN_VM_TOPOLOGY_CHECK_H_

#include "base/status.h"
#include "hal/api.h"
#include "kiln_module_generated.h"

namespace kiln::vm {

// OK when `topology` (may be null: no assumption) fits `device`.
// Errors:
//  - kDataLoss: a link names a device index out of range, or joins a device
//    to itself (the FlatBuffers verifier cannot see this);
//  - kFailedPrecondition: a unified link joins a gpu to the host (or to
//    another gpu) but `device.unified_memory` is false. The message names the
//    module, the link and the device, and says to recompile with
//    --topology=discrete.
// `module_name` is only used in messages (may be null).
Status CheckTopology(const format::Topology* topology, const hal::DeviceInfo& device,
                     const char* module_name);

// Same, for the topology of a verified module (`module` non-null).
Status CheckModuleTopology(const format::Module* module, const hal::DeviceInfo& device);

}  // namespace kiln::vm

#endif  // KILN_VM_TOPOLOGY_CHECK_H_
