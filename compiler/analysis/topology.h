// Device topology (DESIGN.md "Terms": affinity, transfer, topology).
//
// The topology names the devices a program's values may live on and says,
// for each pair, whether the two share memory (`unified`: a transfer between
// them is a no-op, the runtime maps the buffer instead of copying) or not
// (`discrete`: a transfer is a real copy). It is given at compile time
// (kiln-compile --topology=...), read by --elide-transfers, serialized into
// the module (schemas/kiln_module.fbs, table Topology) and checked at run
// time against the Vulkan device (vm/topology_check.h).
//
// Given as one of:
//   --topology=unified    devices `host` (kind host) and `gpu` (kind gpu),
//                         `link host gpu unified` (mobile GPUs, iGPUs);
//   --topology=discrete   the same devices, `link host gpu discrete`;
//   --topology=PATH       a text file in this format, one statement a line:
//       # comment (to the end of the line); blank lines are skipped
//       device NAME kind=host|gpu       NAME: [A-Za-z0-9_.-]+, unique
//       link NAME NAME unified|discrete two different declared devices;
//                                       at most one link per pair
//     Pairs without a link do not share memory (as `discrete`). At least one
//     device is required. `;` also ends a statement, so a whole topology fits
//     on one line: "device host kind=host; device gpu0 kind=gpu; link host
//     gpu0 unified". Errors: InvalidArgument "FILE:LINE: what", e.g.
//     "topo.txt:3: link names unknown device 'gpu1'".
//
// Affinities (the `affinity` / `source_affinity` attributes of stream ops)
// resolve to devices: an exact device name; else a kind name (`host`, `gpu`)
// when exactly one device has that kind (so `gpu` works for a topology that
// calls its only GPU `gpu0`); an absent or empty affinity is the default
// device: the first device of kind gpu, else the first device.
//
// In the IR the topology is one module-level op (so kiln-opt lit tests can
// write it in their input and kiln-compile's --topology sets it):
//   "kiln.topology"() {spec = "unified"} : () -> ()
//   "kiln.topology"() {spec = "device host kind=host; device gpu0 kind=gpu; link host gpu0 unified"} : () -> ()
// `spec` is a preset name or statements in the file format above.
#ifndef KILN_COMPILER_ANALYSIS_TOPOLOGY_H_
#define KILN_COMPILER_ANALYSIS_TOPOLOGY_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace flatbuffers {
class FlatBufferBuilder;
template <typename T>
struct Offset;
}  // namespace flatbuffers
namespace kiln::format {
struct Topology;
}  // namespace kiln::format

namespace kiln::analysis {

enum class DeviceKind : uint8_t { kHost = 0, kGpu = 1 };  // = format::DeviceKind
const char* DeviceKindName(DeviceKind kind);               // "host", "gpu"

struct TopologyDevice {
  std::string name;
  DeviceKind kind = DeviceKind::kGpu;
};

struct TopologyLink {
  int a = 0, b = 0;      // device indices, a != b
  bool unified = false;  // true: the two share memory
};

class Topology {
 public:
  // The presets of --topology=unified / --topology=discrete.
  static Topology Unified();
  static Topology Discrete();

  const std::vector<TopologyDevice>& devices() const { return devices_; }
  const std::vector<TopologyLink>& links() const { return links_; }
  // "unified" or "discrete" when equal to that preset, else "custom".
  std::string kind() const;

  // Device index for an affinity (rules in the file comment); -1 if none.
  int Resolve(std::string_view affinity) const;
  // True when a value on device `a` is directly usable on device `b`:
  // a == b, or a unified link joins them.
  bool SharesMemory(int a, int b) const;
  // True when some unified link joins the host and a gpu, or two gpus: the
  // program then expects device memory that the host (or peer) maps.
  bool RequiresUnifiedMemory() const;

  // The statements of this topology in the file format, `; `-separated, or
  // the preset name when kind() is a preset. ParseTopology reads it back.
  std::string ToSpec() const;

  // Builders (used by the parser and tests). AddDevice returns the index.
  int AddDevice(std::string name, DeviceKind kind);
  void AddLink(int a, int b, bool unified);
  int FindDevice(std::string_view name) const;  // exact name; -1 if absent

 private:
  std::vector<TopologyDevice> devices_;
  std::vector<TopologyLink> links_;
};

// Parses the file format (or a preset name, when `text` is exactly
// "unified" or "discrete"). `filename` prefixes error messages.
StatusOr<Topology> ParseTopology(std::string_view text, const std::string& filename);
// The value of kiln-compile's --topology flag: "unified", "discrete", or a
// path to a file (kNotFound if it cannot be read).
StatusOr<Topology> ParseTopologyFlag(const std::string& value);

// The module-level "kiln.topology" op (see above).
constexpr const char kTopologyOpName[] = "kiln.topology";
// Replaces any existing kiln.topology op; the new one is the first top-level op.
void SetModuleTopology(ir::Module& module, const Topology& topology);
// The module's topology. kNotFound when the module has no kiln.topology op;
// InvalidArgument for a malformed or repeated one.
StatusOr<Topology> GetModuleTopology(ir::Module& module);

// Writes `topology` as a format::Topology table (schemas/kiln_module.fbs),
// for the module emitter: Module.topology.
flatbuffers::Offset<format::Topology> SerializeTopology(flatbuffers::FlatBufferBuilder& fbb,
                                                        const Topology& topology);

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_TOPOLOGY_H_
