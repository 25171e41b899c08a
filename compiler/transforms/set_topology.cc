// --set-topology=SPEC: records the device topology the caller compiles for
// (kiln-compile --topology) as the module's `kiln.topology` op
// (analysis/topology.h), replacing any the module has. SPEC is a preset
// ("unified", "discrete") or the topology text format with `;` between
// lines, as Topology::ToSpec() writes it. elide-transfers reads the op; the
// backend writes it into the module, and the runtime checks it against the
// device at load.
// Errors: kInvalidArgument for a SPEC that does not parse.
#include <string>

#include "compiler/analysis/topology.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

class SetTopologyPass : public ir::Pass {
 public:
  explicit SetTopologyPass(std::string spec) : spec_(std::move(spec)) {}
  const char* flag() const override { return "set-topology"; }
  const char* description() const override { return "Record the device topology as the module's kiln.topology op"; }
  Status Run(ir::Module& module, ir::PassContext&) override {
    auto topology = analysis::ParseTopology(spec_, "--set-topology");
    if (!topology.ok()) return topology.take_status();
    analysis::SetModuleTopology(module, topology.value());
    return OkStatus();
  }

 private:
  std::string spec_;
};

}  // namespace

std::unique_ptr<ir::Pass> CreateSetTopologyPass(const std::string& spec) {
  return std::make_unique<SetTopologyPass>(spec);
}

}  // namespace kiln::transforms
