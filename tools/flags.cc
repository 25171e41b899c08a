#include "tools/flags.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "kiln/kiln.h"  // version macros only

namespace kiln::tools {
namespace {

const FlagSpec* Find(const FlagTable& table, const std::string& name) {
  for (const FlagSpec& f : table.flags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// Levenshtein distance (small strings).
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string HelpText(const FlagTable& table) {
  std::string text = table.usage;
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += "\nflags:\n";
  std::vector<FlagSpec> all = table.flags;
  all.push_back({"--help", nullptr, "print this help and exit"});
  all.push_back({"--version", nullptr, "print the version and exit"});
  for (const FlagSpec& f : all) {
    std::string left = std::string("  ") + f.name;
    if (f.value) left += std::string(f.name[1] == '-' ? "=" : " ") + f.value;
    if (left.size() < 30) left.resize(30, ' ');
    else left += "  ";
    text += left + f.help + "\n";
  }
  if (table.notes) text += std::string("\n") + table.notes;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

std::string VersionText(const FlagTable& table) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%s %d.%d.%d (Kiln API %d)", table.tool, KILN_VERSION_MAJOR,
                KILN_VERSION_MINOR, KILN_VERSION_PATCH, KILN_API_VERSION);
  return buf;
}

std::string NearestFlag(const FlagTable& table, const std::string& name) {
  std::string best;
  size_t best_distance = static_cast<size_t>(-1);
  for (const FlagSpec& f : table.flags) {
    size_t d = Distance(name, f.name);
    // A prefix of a flag ("--device" for "--device-name") is close too.
    if (std::strncmp(f.name, name.c_str(), name.size()) == 0 && name.size() > 3) d = std::min<size_t>(d, 1);
    if (d < best_distance) {
      best_distance = d;
      best = f.name;
    }
  }
  size_t limit = std::max<size_t>(3, name.size() / 3);
  return best_distance <= limit ? best : "";
}

bool NormalizeFlags(const FlagTable& table, int argc, char** argv, std::vector<std::string>* out,
                    int* exit_code) {
  out->clear();
  auto fail = [&](const std::string& message) {
    std::fprintf(stderr, "error: %s\n(%s --help lists every flag)\n", message.c_str(), table.tool);
    *exit_code = 2;
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') {  // positional (also "-")
      out->push_back(a);
      continue;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(HelpText(table).c_str(), stdout);
      *exit_code = 0;
      return false;
    }
    if (a == "--version") {
      std::printf("%s\n", VersionText(table).c_str());
      *exit_code = 0;
      return false;
    }
    if (table.passthrough_prefix && a.rfind(table.passthrough_prefix, 0) == 0) {
      out->push_back(a);
      continue;
    }
    size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    const FlagSpec* spec = Find(table, name);
    if (!spec) {
      std::string near = NearestFlag(table, name);
      return fail("unknown flag '" + name + "'" +
                  (near.empty() ? std::string() : " (did you mean " + near + "?)"));
    }
    if (!spec->value) {
      if (eq != std::string::npos) return fail(name + " takes no value");
      out->push_back(name);
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return fail(name + " needs a value (" + name + (name[1] == '-' ? "=" : " ") + spec->value +
                  ")");
    }
    if (name[1] == '-') {
      out->push_back(name + "=" + value);
    } else {
      out->push_back(name);
      out->push_back(value);
    }
  }
  *exit_code = 0;
  return true;
}

}  // namespace kiln::tools
