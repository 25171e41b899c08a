// tools/flags.h: canonical forms, nearest-flag suggestions, help lines.
#include "tools/flags.h"

#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln::tools {
namespace {

FlagTable Table() {
  return {"kiln-test-tool",
          "usage: kiln-test-tool --module=M.kiln",
          {{"--module", "M.kiln", "the module"},
           {"--device-name", "SUBSTR", "device name substring"},
           {"--device-index", "N", "device index"},
           {"--stats", nullptr, "print counters"},
           {"-o", "OUT", "output file"}},
          "notes here",
          "--benchmark_"};
}

std::vector<std::string> Normalize(std::vector<std::string> args, int* code) {
  std::vector<char*> argv = {const_cast<char*>("tool")};
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<std::string> out;
  if (!NormalizeFlags(Table(), static_cast<int>(argv.size()), argv.data(), &out, code)) return {"EXIT"};
  return out;
}

TEST(FlagsTest, SpaceAndEqualsFormsAreCanonical) {
  int code = -1;
  EXPECT_EQ(Normalize({"--module", "a.kiln", "--device-name=llvm", "x.onnx", "-o", "y", "--stats",
                 "--benchmark_filter=z"},
                &code),
            (std::vector<std::string>{"--module=a.kiln", "--device-name=llvm", "x.onnx", "-o", "y",
                                      "--stats", "--benchmark_filter=z"}));
  EXPECT_EQ(code, 0);
}

TEST(FlagsTest, UnknownFlagsAndMissingValuesExit2) {
  int code = -1;
  EXPECT_EQ(Normalize({"--modul=a"}, &code), std::vector<std::string>{"EXIT"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(Normalize({"--module"}, &code), std::vector<std::string>{"EXIT"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(Normalize({"--stats=1"}, &code), std::vector<std::string>{"EXIT"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(Normalize({"--version"}, &code), std::vector<std::string>{"EXIT"});
  EXPECT_EQ(code, 0);
}

TEST(FlagsTest, NearestFlag) {
  EXPECT_EQ(NearestFlag(Table(), "--modul"), "--module");
  EXPECT_EQ(NearestFlag(Table(), "--moduel"), "--module");
  EXPECT_EQ(NearestFlag(Table(), "--device"), "--device-name");
  EXPECT_EQ(NearestFlag(Table(), "--device-idx"), "--device-index");
  EXPECT_EQ(NearestFlag(Table(), "--stat"), "--stats");
  EXPECT_EQ(NearestFlag(Table(), "--completely-different-thing"), "");
}

TEST(FlagsTest, HelpHasOneDescribedLinePerFlag) {
  std::string help = HelpText(Table());
  for (const char* line : {"  --module=M.kiln             the module\n",
                           "  --stats                     print counters\n",
                           "  -o OUT                      output file\n",
                           "  --version                   print the version and exit\n"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << "\nin:\n" << help;
  }
  EXPECT_EQ(VersionText(Table()).rfind("kiln-test-tool " + std::to_string(KILN_VERSION_MAJOR) + ".", 0), 0u);
}

}  // namespace
}  // namespace kiln::tools
