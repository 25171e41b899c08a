// Device topology: parsing, the module-level op, serialization (topology.h).
#include "compiler/analysis/topology.h"

#include <fstream>
#include <sstream>

#include "kiln_module_generated.h"

namespace kiln::analysis {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool IsName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!IsNameChar(c)) return false;
  return true;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    if (i > start) words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

Topology Preset(bool unified) {
  Topology t;
  int host = t.AddDevice("host", DeviceKind::kHost);
  int gpu = t.AddDevice("gpu", DeviceKind::kGpu);
  t.AddLink(host, gpu, unified);
  return t;
}

bool SameAs(const Topology& a, const Topology& b) {
  if (a.devices().size() != b.devices().size() || a.links().size() != b.links().size()) return false;
  for (size_t i = 0; i < a.devices().size(); ++i)
    if (a.devices()[i].name != b.devices()[i].name || a.devices()[i].kind != b.devices()[i].kind)
      return false;
  for (size_t i = 0; i < a.links().size(); ++i) {
    const TopologyLink& x = a.links()[i];
    const TopologyLink& y = b.links()[i];
    bool same_pair = (x.a == y.a && x.b == y.b) || (x.a == y.b && x.b == y.a);
    if (!same_pair || x.unified != y.unified) return false;
  }
  return true;
}

}  // namespace

const char* DeviceKindName(DeviceKind kind) { return kind == DeviceKind::kHost ? "host" : "gpu"; }

Topology Topology::Unified() { return Preset(true); }
Topology Topology::Discrete() { return Preset(false); }

std::string Topology::kind() const {
  if (SameAs(*this, Unified())) return "unified";
  if (SameAs(*this, Discrete())) return "discrete";
  return "custom";
}

int Topology::AddDevice(std::string name, DeviceKind kind) {
  devices_.push_back(TopologyDevice{std::move(name), kind});
  return static_cast<int>(devices_.size()) - 1;
}

void Topology::AddLink(int a, int b, bool unified) { links_.push_back(TopologyLink{a, b, unified}); }

int Topology::FindDevice(std::string_view name) const {
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].name == name) return static_cast<int>(i);
  return -1;
}

int Topology::Resolve(std::string_view affinity) const {
  if (devices_.empty()) return -1;
  if (affinity.empty()) {
    for (size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i].kind == DeviceKind::kGpu) return static_cast<int>(i);
    return 0;
  }
  int exact = FindDevice(affinity);
  if (exact >= 0) return exact;
  for (DeviceKind k : {DeviceKind::kHost, DeviceKind::kGpu}) {
    if (affinity != DeviceKindName(k)) continue;
    int found = -1, count = 0;
    for (size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i].kind == k) {
        found = static_cast<int>(i);
        ++count;
      }
    if (count == 1) return found;
  }
  return -1;
}

bool Topology::SharesMemory(int a, int b) const {
  if (a < 0 || b < 0) return false;
  if (a == b) return true;
  for (const TopologyLink& l : links_)
    if (((l.a == a && l.b == b) || (l.a == b && l.b == a)) && l.unified) return true;
  return false;
}

bool Topology::RequiresUnifiedMemory() const {
  for (const TopologyLink& l : links_) {
    if (!l.unified) continue;
    if (devices_[l.a].kind == DeviceKind::kGpu || devices_[l.b].kind == DeviceKind::kGpu) return true;
  }
  return false;
}

std::string Topology::ToSpec() const {
  std::string k = kind();
  if (k != "custom") return k;
  std::string s;
  for (const TopologyDevice& d : devices_) {
    if (!s.empty()) s += "; ";
    s += "device " + d.name + " kind=" + DeviceKindName(d.kind);
  }
  for (const TopologyLink& l : links_)
    s += "; link " + devices_[l.a].name + " " + devices_[l.b].name + (l.unified ? " unified" : " discrete");
  return s;
}

StatusOr<Topology> ParseTopology(std::string_view text, const std::string& filename) {
  // A preset name alone (surrounding blanks allowed).
  std::vector<std::string> all = Words(text);
  if (all.size() == 1 && all[0] == "unified") return Topology::Unified();
  if (all.size() == 1 && all[0] == "discrete") return Topology::Discrete();

  Topology t;
  int line_no = 1;
  size_t pos = 0;
  auto fail = [&](const std::string& what) {
    return InvalidArgumentError("%s:%d: %s", filename.c_str(), line_no, what.c_str());
  };
  while (pos <= text.size()) {
    size_t end = pos;
    while (end < text.size() && text[end] != '\n' && text[end] != ';') ++end;
    std::string_view stmt = text.substr(pos, end - pos);
    size_t hash = stmt.find('#');
    if (hash != std::string_view::npos) stmt = stmt.substr(0, hash);
    std::vector<std::string> w = Words(stmt);
    if (!w.empty()) {
      if (w[0] == "device") {
        if (w.size() != 3) return fail("expected `device NAME kind=host|gpu`");
        if (!IsName(w[1])) return fail("bad device name '" + w[1] + "' (want [A-Za-z0-9_.-]+)");
        if (t.FindDevice(w[1]) >= 0) return fail("device '" + w[1] + "' declared twice");
        DeviceKind kind;
        if (w[2] == "kind=host") {
          kind = DeviceKind::kHost;
        } else if (w[2] == "kind=gpu") {
          kind = DeviceKind::kGpu;
        } else {
          return fail("bad device kind '" + w[2] + "' (want kind=host or kind=gpu)");
        }
        t.AddDevice(w[1], kind);
      } else if (w[0] == "link") {
        if (w.size() != 4) return fail("expected `link NAME NAME unified|discrete`");
        int a = t.FindDevice(w[1]);
        if (a < 0) return fail("link names unknown device '" + w[1] + "'");
        int b = t.FindDevice(w[2]);
        if (b < 0) return fail("link names unknown device '" + w[2] + "'");
        if (a == b) return fail("link joins device '" + w[1] + "' to itself");
        bool unified;
        if (w[3] == "unified") {
          unified = true;
        } else if (w[3] == "discrete") {
          unified = false;
        } else {
          return fail("bad link kind '" + w[3] + "' (want unified or discrete)");
        }
        for (const TopologyLink& l : t.links())
          if ((l.a == a && l.b == b) || (l.a == b && l.b == a))
            return fail("second link between '" + w[1] + "' and '" + w[2] + "'");
        t.AddLink(a, b, unified);
      } else {
        return fail("unknown statement '" + w[0] + "' (want `device` or `link`)");
      }
    }
    if (end < text.size() && text[end] == '\n') ++line_no;
    pos = end + 1;
  }
  if (t.devices().empty())
    return InvalidArgumentError("%s: topology declares no device (want `device NAME kind=host|gpu` lines, "
                                "or the presets `unified` / `discrete`)",
                                filename.c_str());
  return t;
}

StatusOr<Topology> ParseTopologyFlag(const std::string& value) {
  if (value == "unified") return Topology::Unified();
  if (value == "discrete") return Topology::Discrete();
  std::ifstream in(value, std::ios::binary);
  if (!in)
    return NotFoundError("'%s' is neither `unified`, `discrete` nor a readable file",
                         value.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTopology(ss.str(), value);
}

void SetModuleTopology(ir::Module& module, const Topology& topology) {
  ir::Block* body = module.body();
  for (auto it = body->ops().begin(); it != body->ops().end();) {
    ir::Operation* op = (it++)->get();
    if (op->is(kTopologyOpName)) op->Erase();
  }
  auto op = ir::Operation::Create(kTopologyOpName, {}, {}, {{"spec", ir::Attribute(topology.ToSpec())}});
  if (body->empty()) {
    body->Append(std::move(op));
  } else {
    body->InsertBefore(body->ops().front().get(), std::move(op));
  }
}

StatusOr<Topology> GetModuleTopology(ir::Module& module) {
  ir::Operation* found = nullptr;
  for (auto& op : module.body()->ops()) {
    if (!op->is(kTopologyOpName)) continue;
    if (found) return InvalidArgumentError("module has more than one kiln.topology op");
    found = op.get();
  }
  if (!found) return NotFoundError("module has no kiln.topology op");
  const ir::Attribute* spec = found->attr("spec");
  const std::string* text = spec ? std::get_if<std::string>(&spec->value) : nullptr;
  if (!text) return InvalidArgumentError("kiln.topology op needs a string attribute `spec`");
  return ParseTopology(*text, "kiln.topology");
}

flatbuffers::Offset<format::Topology> SerializeTopology(flatbuffers::FlatBufferBuilder& fbb,
                                                        const Topology& topology) {
  std::vector<flatbuffers::Offset<format::TopologyDevice>> devices;
  for (const TopologyDevice& d : topology.devices())
    devices.push_back(format::CreateTopologyDevice(
        fbb, fbb.CreateString(d.name),
        d.kind == DeviceKind::kHost ? format::DeviceKind::host : format::DeviceKind::gpu));
  std::vector<format::TopologyLink> links;
  for (const TopologyLink& l : topology.links())
    links.emplace_back(static_cast<uint16_t>(l.a), static_cast<uint16_t>(l.b), l.unified);
  auto kind = fbb.CreateString(topology.kind());
  auto dv = fbb.CreateVector(devices);
  auto lv = fbb.CreateVectorOfStructs(links);
  return format::CreateTopology(fbb, kind, dv, lv);
}

}  // namespace kiln::analysis
