// Run-time topology check (topology_check.h).
#include "vm/topology_check.h"

namespace kiln::vm {
namespace {

const char* DeviceName(const format::Topology* topology, uint16_t index) {
  const format::TopologyDevice* d = topology->devices()->Get(index);
  return d && d->name() ? d->name()->c_str() : "?";
}

bool IsGpu(const format::Topology* topology, uint16_t index) {
  const format::TopologyDevice* d = topology->devices()->Get(index);
  return d && d->kind() == format::DeviceKind::gpu;
}

}  // namespace

Status CheckTopology(const format::Topology* topology, const hal::DeviceInfo& device,
                     const char* module_name) {
  if (!topology || !topology->links()) return OkStatus();
  const char* mod = module_name ? module_name : "?";
  uint32_t device_count = topology->devices() ? topology->devices()->size() : 0;
  for (uint32_t i = 0; i < topology->links()->size(); ++i) {
    const format::TopologyLink* link = topology->links()->Get(i);
    if (link->a() >= device_count || link->b() >= device_count)
      return DataLossError("module '%s': topology link %u names device %u of %u", mod, i,
                           static_cast<unsigned>(link->a() >= device_count ? link->a() : link->b()),
                           device_count);
    if (link->a() == link->b())
      return DataLossError("module '%s': topology link %u joins device %u to itself", mod, i,
                           static_cast<unsigned>(link->a()));
  }
  if (device.unified_memory) return OkStatus();
  for (uint32_t i = 0; i < topology->links()->size(); ++i) {
    const format::TopologyLink* link = topology->links()->Get(i);
    if (!link->unified()) continue;
    if (!IsGpu(topology, link->a()) && !IsGpu(topology, link->b())) continue;
    return FailedPreconditionError(
        "module '%s' was compiled for a unified-memory topology (link %s<->%s shares memory, so "
        "transfers between them were elided) but device '%s' has no host-visible device-local "
        "memory (unified_memory = false); recompile with --topology=discrete",
        mod, DeviceName(topology, link->a()), DeviceName(topology, link->b()), device.name.c_str());
  }
  return OkStatus();
}

Status CheckModuleTopology(const format::Module* module, const hal::DeviceInfo& device) {
  const char* name = module->name() ? module->name()->c_str() : "?";
  return CheckTopology(module->topology(), device, name);
}

}  // namespace kiln::vm
