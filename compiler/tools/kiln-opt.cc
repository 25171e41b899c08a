// kiln-opt: parses textual IR, verifies it, runs passes, prints the result.
//
// Usage: kiln-opt FILE.kir|- [--<pass-flag> ...] [--split-input-file]
//                 [--verify-each[=0|1]] [--no-verify-each] [--remarks]
//                 [--keep-names] [--list-passes] [-o OUT]
//
//  - Passes run in command-line order; each is verified after it runs
//    (on by default). An unknown flag is `error: unknown pass '--x'`.
//  - --split-input-file: the input is cut at lines `// -----`; each chunk is
//    processed on its own (line numbers in errors stay those of the file),
//    and the outputs are joined by `// -----` lines. A failing chunk prints
//    its error and the others still run.
//  - --remarks: pass remarks (PassContext::Remark) go to stderr, before the
//    chunk's printed IR.
//  - Errors go to stderr as `error: ...`; the exit code is 1 if any chunk
//    failed, else 0.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/pass.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#ifdef KILN_HAVE_TRANSFORMS
#include "compiler/transforms/passes.h"
#endif

namespace {

struct Options {
  std::string input;
  std::string output;
  std::vector<std::string> passes;
  bool split = false;
  bool verify_each = true;
  bool remarks = false;
  bool keep_names = false;
};

void PrintError(const std::string& msg) {
  std::fflush(stdout);
  std::cout.flush();
  std::cerr << "error: " << msg << "\n";
  std::cerr.flush();
}

// Processes one chunk; appends the printed module to `out`. False on error.
bool ProcessChunk(const std::string& text, const Options& opts, std::string* out) {
  kiln::ir::ParseOptions parse_options;
  parse_options.keep_names = opts.keep_names;
  auto parsed = kiln::ir::ParseModule(text, opts.input, parse_options);
  if (!parsed.ok()) {
    PrintError(parsed.status().message());
    return false;
  }
  kiln::ir::Module& module = **parsed;
  kiln::Status st = kiln::ir::Verify(module);
  if (!st.ok()) {
    PrintError(st.message());
    return false;
  }
  kiln::ir::PassContext ctx;
  bool ok = true;
  for (const std::string& flag : opts.passes) {
    auto pass = kiln::ir::CreatePass(flag);
    st = pass->Run(module, ctx);
    if (!st.ok()) {
      PrintError("--" + flag + ": " + st.message());
      ok = false;
      break;
    }
    if (opts.verify_each) {
      st = kiln::ir::Verify(module);
      if (!st.ok()) {
        PrintError("verification failed after --" + flag + ": " + st.message());
        ok = false;
        break;
      }
    }
  }
  if (opts.remarks && !ctx.remarks.empty()) {
    std::cout.flush();
    for (const std::string& r : ctx.remarks) std::cerr << r << "\n";
    std::cerr.flush();
  }
  if (!ok) return false;
  *out += kiln::ir::PrintModule(module);
  return true;
}

// Splits at lines that are exactly `// -----` (surrounding blanks allowed).
// Each chunk is prefixed with newlines so line numbers match the file.
std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> chunks;
  std::string current;
  int line = 1, chunk_start = 1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string l = text.substr(pos, end - pos);
    size_t a = l.find_first_not_of(" \t\r\n");
    size_t b = l.find_last_not_of(" \t\r\n");
    bool sep = a != std::string::npos && l.substr(a, b - a + 1) == "// -----";
    if (sep) {
      chunks.push_back(std::string(chunk_start - 1, '\n') + current);
      current.clear();
      chunk_start = line + 1;
    } else {
      current += l;
    }
    ++line;
    pos = end;
  }
  chunks.push_back(std::string(chunk_start - 1, '\n') + current);
  return chunks;
}

int Usage() {
  std::cerr << "usage: kiln-opt FILE.kir|- [--<pass> ...] [--split-input-file] [--verify-each[=0|1]]"
               " [--no-verify-each] [--remarks] [--keep-names] [--list-passes] [-o OUT]\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef KILN_HAVE_TRANSFORMS
  kiln::transforms::RegisterAllPasses();
#endif
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o") {
      if (++i >= argc) return Usage();
      opts.output = argv[i];
    } else if (a == "--split-input-file") {
      opts.split = true;
    } else if (a == "--verify-each" || a == "--verify-each=1" || a == "--verify-each=true") {
      opts.verify_each = true;
    } else if (a == "--no-verify-each" || a == "--verify-each=0" || a == "--verify-each=false") {
      opts.verify_each = false;
    } else if (a == "--remarks") {
      opts.remarks = true;
    } else if (a == "--keep-names") {
      opts.keep_names = true;
    } else if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    } else if (a == "--list-passes") {
      for (const std::string& f : kiln::ir::RegisteredPassFlags()) std::cout << "--" << f << "\n";
      return 0;
    } else if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string flag = a.substr(2);
      if (!kiln::ir::CreatePass(flag)) {
        PrintError("unknown pass '" + a + "'");
        return 1;
      }
      opts.passes.push_back(flag);
    } else if (a != "-" && a.size() > 1 && a[0] == '-') {
      PrintError("unknown option '" + a + "'");
      return 1;
    } else if (opts.input.empty()) {
      opts.input = a;
    } else {
      PrintError("more than one input file");
      return 1;
    }
  }
  if (opts.input.empty()) return Usage();

  std::string text;
  if (opts.input == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
    opts.input = "<stdin>";
  } else {
    std::ifstream in(opts.input, std::ios::binary);
    if (!in) {
      PrintError("cannot open '" + opts.input + "'");
      return 1;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }

  std::vector<std::string> chunks = opts.split ? Split(text) : std::vector<std::string>{text};
  bool all_ok = true;
  std::ofstream file_out;
  if (!opts.output.empty()) {
    file_out.open(opts.output, std::ios::binary);
    if (!file_out) {
      PrintError("cannot write '" + opts.output + "'");
      return 1;
    }
  }
  std::ostream& out = opts.output.empty() ? std::cout : file_out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::string printed;
    if (!ProcessChunk(chunks[i], opts, &printed)) all_ok = false;
    if (i > 0) out << "// -----\n";
    out << printed;
    out.flush();
  }
  return all_ok ? 0 : 1;
}
