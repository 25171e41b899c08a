// kiln-compile: ONNX (or .kir text) -> Kiln module.
//
//   kiln-compile MODEL.onnx -o OUT.kiln [--input-shape=NAME=1x3x48x192 ...]
//                [--constant-input=NAME=V ...] [--sequence-input=NAME=[S0,S1,...] ...]
//                [--consume=NAME ...]
//                [--topology=unified|discrete|FILE]
//                [--emit=kiln|kir-tensor|kir-stream|kir-alloc] [--explain-copies] [--no-elision]
//                [--print-ir-after-all] [--dump-glsl=FILE] [--report]
//                [--module-name=NAME] [--precision=f32|f16] [--exact-fma=state|all|none]
//                [--no-f16-arithmetic] [--fuse-pad] [--unroll-in-module] [--no-texels]
//
// --fuse-pad (opt-in): a constant Pad of a dispatch's result costs no
// dispatch and no copy: the producer writes the interior (at the padded
// tensor's strides when it is not one contiguous range), fills write the
// border (compiler/transforms/fuse_pad.cc; docs/architecture.md "Pad fusion").
//
// --precision=f16: weights and activations are stored as f16, arithmetic and
// accumulation stay f32, inputs and outputs keep their declared dtypes
// (compiler/transforms/demote_f32_to_f16.cc; docs/precision.md gives the
// error to expect). Default f32.
//
// --no-f16-arithmetic: no f16-arithmetic variants. By default an
// elementwise dispatch whose tensors are all f16 also gets a SPIR-V variant
// computing in float16_t, which the runtime picks on devices with
// shaderFloat16 (compiler/codegen/f16_arithmetic.h).
//
// --unroll-in-module: unroll the register-block loops (a conv's TO x TW
// accumulators) in the module. By default they stay loops marked [[unroll]]
// that the driver's compiler unrolls, and the module is smaller (cls:
// 998,976 -> 670,592 B); the flag is for a driver that ignores the hint,
// and for comparing the two on a GPU.
//
// --no-texels: every binding a storage buffer. By default conv register
// blocks read their input rows and 1x1 weights as vec4 texels of a uniform
// texel buffer where the shapes allow (compiler/codegen/schedule_table.h
// SelectConvTexels); the flag is for a device whose texel buffers are slow
// or limited, and for A/B runs.
//
// --sequence-input fixes the structure of a sequence/optional graph input:
// NAME=[2x3,scalar] (element shapes), NAME=[] (empty), NAME=none (an empty
// optional). Its elements become arguments NAME.0, NAME.1, ...; a sequence
// graph output of N elements becomes results NAME.0 ... NAME.<N-1>
// (compiler/import/onnx/onnx_importer.h).
//
// --module-name names the module (default: the input file name up to its
// first '.'). Other modules import its exports as "NAME.function", e.g. a
// driver's func.func {import = true, sym_name = "mel.main"} needs the
// melspectrogram module compiled with --module-name=mel.
//
// --topology gives the device topology (compiler/analysis/topology.h) that
// elide-transfers uses; it is recorded in the module and checked against the
// device at run time. --explain-copies prints every copy left in the final
// program with the reason the analysis kept it, then (when a module is
// written) every copy the emitter adds that no IR op names, with its reason.
//
// --consume=NAME marks graph input NAME as ABI `consume`: the caller hands
// the buffer over and the module may update it in place.
//
// Errors go to stderr as `error: ...` with exit code 1: unsupported ONNX ops
// are named with their node, bad shapes name the input.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/tools/compile_driver.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/backend/emit_module.h"
#include "compiler/transforms/pipeline.h"
#include "compiler/transforms/place_barriers.h"
#include "tools/flags.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

const kiln::tools::FlagTable kFlags = {
    "kiln-compile",
    "usage: kiln-compile MODEL.onnx|MODEL.kir -o OUT.kiln [flags]\n"
    "Compiles an ONNX model (or a .kir program) into a Kiln module for kiln-run / the C API.",
    {
        {"-o", "OUT.kiln", "the module to write (required)"},
        {"--input-shape", "NAME=DIMS", "fix a dynamic graph input's shape, e.g. x=1x3x48x192"},
        {"--constant-input", "NAME=V", "fix a graph input's value at compile time (folds If on it)"},
        {"--sequence-input", "NAME=[S0,...]", "fix a sequence/optional input's structure"},
        {"--consume", "NAME", "ABI consume: the module may update argument NAME in place"},
        {"--topology", "unified|discrete|FILE", "device topology for transfer elision"},
        {"--emit", "kiln|kir-tensor|kir-stream|kir-alloc", "what to write (default kiln; kir-*: print the IR at that level)"},
        {"--explain-copies", nullptr, "print every copy left in the program, with its reason"},
        {"--no-elision", nullptr, "keep every defensive copy (debugging copy elision)"},
        {"--print-ir-after-all", nullptr, "print the IR after every pass"},
        {"--dump-glsl", "FILE", "write the generated GLSL of every dispatch to FILE"},
        {"--report", nullptr, "print module size, dispatches, executables, constant and arena bytes, barriers and their bytes"},
        {"--module-name", "NAME", "the module's name, which other modules import it by"},
        {"--native-fma", nullptr, "accepted and ignored (modules always use fma(); exact on CPU drivers at load)"},
        {"--precision", "f32|f16", "f16: store weights and activations as f16 (ABI unchanged)"},
        {"--exact-fma", "state|all|none", "dispatches that multiply-add rounded once on CPU drivers too (default state: those carried state depends on)"},
        {"--no-f16-arithmetic", nullptr, "no float16_t variants of all-f16 elementwise dispatches"},
        {"--unroll-in-module", nullptr, "unroll register-block loops in the module (default: the driver unrolls them)"},
        {"--no-texels", nullptr, "bind every operand as a storage buffer (default: conv blocks read vec4 texels where shapes allow)"},
        {"--fuse-pad", nullptr, "opt-in: a constant Pad of a dispatch result: the producer writes the interior (strided too), fills write the border"},
    },
    "--sequence-input: =[2x3,4] lists element shapes, =[] is empty, =none an absent optional;\n"
    "its elements become arguments NAME.0, NAME.1, ...\n"};


}  // namespace

int main(int argc, char** argv) {
  std::string input, output, emit = "kiln", dump_glsl;
  bool print_after_all = false, report = false, explain_copies = false;
  // The flags that change the module go to the driver (shared with the
  // compiler library); the rest choose what this tool writes.
  kiln::driver::CompileOptions options;
  bool named = false;
  std::vector<std::string> args;
  int exit_code = 0;
  if (!kiln::tools::NormalizeFlags(kFlags, argc, argv, &args, &exit_code)) return exit_code;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    kiln::Status applied = kiln::driver::ApplyCompileFlag(a, &options);
    if (applied.ok()) {
      named |= a.rfind("--module-name=", 0) == 0;
      continue;
    }
    if (applied.code() != kiln::StatusCode::kNotFound) return Fail(applied.message());
    if (a == "-o" && i + 1 < args.size()) {
      output = args[++i];
    } else if (a == "--explain-copies") {
      explain_copies = true;
    } else if (a.rfind("--emit=", 0) == 0) {
      emit = a.substr(7);
    } else if (a.rfind("--dump-glsl=", 0) == 0) {
      dump_glsl = a.substr(12);
    } else if (a == "--print-ir-after-all") {
      print_after_all = true;
    } else if (a == "--report") {
      report = true;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return Fail("unknown flag '" + a + "' (kiln-compile --help lists every flag)");
    } else if (input.empty()) {
      input = a;
    } else {
      return Fail("more than one input file ('" + input + "', '" + a + "')");
    }
  }
  if (input.empty()) {
    std::fputs(kiln::tools::HelpText(kFlags).c_str(), stderr);
    return Fail("no input file");
  }
  if (output.empty() && emit == "kiln") return Fail("no output file (-o OUT.kiln)");

  using Level = kiln::transforms::PipelineOptions::Level;
  kiln::transforms::PipelineOptions& pipeline_options = options.pipeline;
  pipeline_options.level = emit == "kir-tensor" ? Level::kTensor : emit == "kir-stream" ? Level::kStream : Level::kAllocated;
  std::vector<std::string> after_each;
  if (print_after_all) pipeline_options.ir_after_each = &after_each;
  std::vector<std::string> copy_remarks;
  pipeline_options.last_copy_remarks = &copy_remarks;

  auto loaded = kiln::driver::LoadModel(input, options);
  if (!loaded.ok()) return Fail(loaded.status().message());
  std::unique_ptr<kiln::ir::Module> module = std::move(loaded.value());
  kiln::ir::PassContext ctx;
  kiln::Status piped = kiln::driver::RunPipeline(*module, options, ctx);
  for (const std::string& ir : after_each) std::cerr << ir << "\n";
  if (!piped.ok()) return Fail(piped.message());
  if (emit == "kir-tensor") {
    std::cout << kiln::ir::PrintModule(*module);
    return 0;
  }
  if (explain_copies) {
    // Copies that survive elision, with the analysis' reason; the final
    // program's clones are counted so a copy without a remark still shows.
    // (clone, transfer, update and copy: each records one copy command).
    // A result copy shared by results of one value (`shared_result`) is
    // made only into output storage the caller supplies: counted apart.
    int copies = 0, shared = 0;
    using kiln::ir::OpCode;
    for (kiln::ir::Operation* f : module->functions())
      f->Walk([&](kiln::ir::Operation* op) {
        bool is_shared = op->is(OpCode::kStreamAsyncClone) && op->has_attr("shared_result");
        shared += is_shared;
        copies += !is_shared && (op->is(OpCode::kStreamAsyncClone) || op->is(OpCode::kStreamAsyncTransfer) ||
                                 op->is(OpCode::kStreamAsyncUpdate) || op->is(OpCode::kStreamAsyncCopy));
      });
    std::printf("copies in the final program: %d\n", copies);
    if (shared) std::printf("result copies made only into caller output storage: %d\n", shared);
    // The reasons the pipeline's last copy elision gave (on the program
    // before scheduling, whose values read as written); without elision
    // (--no-elision), the analysis run once on the final program.
    if (pipeline_options.disable_elision) {
      // On a copy of the program: the pass removes the copies it explains,
      // and the module written must stay the one compiled without elision.
      auto copy = kiln::ir::ParseModule(kiln::ir::PrintModule(*module), input);
      if (!copy.ok()) return Fail(copy.status().message());
      kiln::ir::PassContext final_ctx;
      kiln::Status explained = kiln::ir::CreatePass("elide-async-copies")->Run(*copy.value(), final_ctx);
      if (!explained.ok()) return Fail(explained.message());
      copy_remarks = final_ctx.remarks;
    }
    for (const std::string& r : copy_remarks)
      if (r.find("kept copy") != std::string::npos) std::printf("%s\n", r.c_str());
    for (const std::string& r : ctx.remarks)
      if (r.find("transfer kept") != std::string::npos || r.find("edge copy:") != std::string::npos ||
          r.find("result copy:") != std::string::npos || r.find("result view:") != std::string::npos ||
          r.find("concat copy kept") != std::string::npos ||
          r.find("concat stays a dispatch") != std::string::npos ||
          r.find("pad stays a dispatch") != std::string::npos ||  // --fuse-pad's refusals
          r.find("strided placement:") != std::string::npos)      // and its strided interiors
        std::printf("%s\n", r.c_str());
  }
  if (emit == "kir-stream" || emit == "kir-alloc") {
    std::cout << kiln::ir::PrintModule(*module);
    return 0;
  }
  if (emit != "kiln") return Fail("unknown --emit '" + emit + "'");

  kiln::backend::EmitOptions& emit_options = options.emit;
  if (!named) emit_options.module_name = kiln::driver::DefaultModuleName(input);
  std::ofstream glsl;
  if (!dump_glsl.empty()) {
    glsl.open(dump_glsl);
    if (!glsl) return Fail("cannot write '" + dump_glsl + "'");
    emit_options.glsl_dump = &glsl;
  }
  kiln::backend::EmitReport emit_report;
  auto bytes = kiln::backend::EmitModule(*module, emit_options, &emit_report);
  if (!bytes.ok()) return Fail(bytes.status().message());
  // Atomically: a temporary file beside the output, then rename(2), so a
  // runtime that has the old module mapped (kiln_module_load_file mmaps it)
  // keeps its bytes, and a failed write leaves no truncated module.
  const std::string temp = output + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary);
    if (!out) return Fail("cannot write '" + temp + "'");
    out.write(reinterpret_cast<const char*>(bytes.value().data()), static_cast<std::streamsize>(bytes.value().size()));
    out.close();
    if (!out) {
      std::remove(temp.c_str());
      return Fail("failed writing '" + temp + "'");
    }
  }
  if (std::rename(temp.c_str(), output.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temp.c_str());
    return Fail("cannot rename '" + temp + "' to '" + output + "': " + why);
  }
  if (report) {
    std::printf("module_bytes: %zu\ndispatches: %d\nexecutables: %d\nentry_points: %d\nconstant_bytes: %lld\n"
                "transient_arena_bytes: %lld\ntransient_live_peak_bytes: %lld\ntransient_bytes_without_planning: %lld\n",
                bytes.value().size(), emit_report.dispatches, emit_report.executables, emit_report.entry_points,
                static_cast<long long>(emit_report.constant_bytes), static_cast<long long>(emit_report.arena_bytes),
                static_cast<long long>(emit_report.live_bytes_peak),
                static_cast<long long>(emit_report.unplanned_transient_bytes));
    std::printf("deallocas: %d\nretains: %d\nreleases: %d\ndeallocas_dropping_registers: %d\n",
                emit_report.deallocas, emit_report.retains, emit_report.releases, emit_report.dropped_registers);
    // Barriers placed by --place-barriers (stream.cmd.barrier ops): their
    // ranges' bytes; a range over a whole buffer whose base is known only
    // at run time (an argument, output or call result) is counted apart.
    kiln::transforms::BarrierTotals barriers = kiln::transforms::CountBarriers(*module);
    std::printf("barriers: %lld\nbarrier_ranges: %lld\nbarrier_bytes: %lld\nbarrier_whole_buffer_ranges: %lld\n",
                static_cast<long long>(barriers.barriers), static_cast<long long>(barriers.ranges),
                static_cast<long long>(barriers.bytes), static_cast<long long>(barriers.whole_buffer_ranges));
    // Host barriers (device writes -> host reads: results, loaded bytes).
    std::printf("host_barriers: %lld\nhost_barrier_ranges: %lld\nhost_barrier_bytes: %lld\n"
                "host_barrier_whole_buffer_ranges: %lld\n",
                static_cast<long long>(barriers.host_barriers), static_cast<long long>(barriers.host_ranges),
                static_cast<long long>(barriers.host_bytes),
                static_cast<long long>(barriers.host_whole_buffer_ranges));
  }
  return 0;
}
