// Command-line flags shared by kiln-compile, kiln-run, kiln-bench and
// kiln-dump: one table per tool (name, value placeholder, one-line help),
// from which --help is printed and against which arguments are checked.
//
// NormalizeFlags accepts `--name=value` and `--name value` (and `-o value`),
// prints --help / --version, rejects an unknown flag naming the nearest
// known one ("unknown flag '--modul' (did you mean --module?)"), and hands
// the tool canonical arguments: `--name=value` for value flags, `--name` for
// switches, positional arguments unchanged, in the given order.
#ifndef KILN_TOOLS_FLAGS_H_
#define KILN_TOOLS_FLAGS_H_

#include <string>
#include <vector>

namespace kiln::tools {

struct FlagSpec {
  const char* name;   // "--module", or a short "-o"
  const char* value;  // placeholder ("PATH"); nullptr: a switch without value
  const char* help;   // one line
};

struct FlagTable {
  const char* tool;                 // "kiln-run"
  const char* usage;                // first line(s) of --help, without the flag list
  std::vector<FlagSpec> flags;
  const char* notes = nullptr;      // printed after the flag list (may be null)
  // Arguments starting with this prefix pass through unchecked (kiln-bench:
  // "--benchmark_" for Google Benchmark); null: none.
  const char* passthrough_prefix = nullptr;
};

// The --help text: usage, one line per flag, notes.
std::string HelpText(const FlagTable& table);

// "kiln-run 0.1.0 (Kiln API 1)".
std::string VersionText(const FlagTable& table);

// The known flag closest to `name` (edit distance), or "" when none is
// close (distance above a third of the name's length, at least 3).
std::string NearestFlag(const FlagTable& table, const std::string& name);

// Checks and canonicalizes argv[1..argc). Returns true to go on, with the
// canonical arguments in *out. Returns false when the tool should exit with
// *exit_code: 0 after printing --help / --version to stdout, 2 after
// printing "error: ..." for a bad flag to stderr.
bool NormalizeFlags(const FlagTable& table, int argc, char** argv, std::vector<std::string>* out,
                    int* exit_code);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_FLAGS_H_
