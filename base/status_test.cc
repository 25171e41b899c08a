// Status in both builds: with messages (the default) and code-only
// (KILN_STATUS_MESSAGES=0, the smallest runtime; this file is compiled a
// second time with it, as kiln_base_status_codes_only_test). The expected
// texts are written out by hand.
#include "base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

// Counts its calls, so a test can see whether KILN_STATUS_TEXT evaluated it.
int g_text_calls = 0;
const char* CountedText() {
  ++g_text_calls;
  return "tensor<4xf32>";
}

TEST(StatusTest, OkIsEmpty) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(std::string(ok.message()), "");
  EXPECT_EQ(ok.ToString(), "OK");
  // Annotating OK keeps it OK.
  ok.Annotate("context");
  EXPECT_TRUE(ok.ok());
}

TEST(StatusTest, CodeNames) {
  EXPECT_STREQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDataLoss), "DATA_LOSS");
  EXPECT_STREQ(StatusCodeName(StatusCode::kNotFound), "NOT_FOUND");
  EXPECT_STREQ(StatusCodeName(StatusCode::kUnimplemented), "UNIMPLEMENTED");
  EXPECT_STREQ(StatusCodeName(StatusCode::kResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(StatusCodeName(StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInternal), "INTERNAL");
  EXPECT_STREQ(StatusCodeName(StatusCode::kOutOfRange), "OUT_OF_RANGE");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(42)), "UNKNOWN");
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(-1)), "UNKNOWN");
}

TEST(StatusTest, ErrorsKeepTheirCodeAndCopies) {
  Status s = DataLossError("module is %d bytes, needs %d", 7, 16);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  Status copy = s;
  EXPECT_EQ(copy.code(), StatusCode::kDataLoss);
  EXPECT_EQ(std::string(copy.message()), std::string(s.message()));
  Status moved = std::move(copy);
  EXPECT_EQ(moved.code(), StatusCode::kDataLoss);
  EXPECT_EQ(Status(StatusCode::kNotFound).code(), StatusCode::kNotFound);
}

#if KILN_STATUS_MESSAGES

TEST(StatusTest, MessagesAreFormattedAndAnnotated) {
  Status s = InvalidArgumentError("argument %d '%s': expected %s", 0, "x",
                                  KILN_STATUS_TEXT(CountedText()));
  EXPECT_EQ(g_text_calls, 1);
  EXPECT_EQ(std::string(s.message()), "argument 0 'x': expected tensor<4xf32>");
  s.Annotate("main@0x0012");
  EXPECT_EQ(std::string(s.message()), "main@0x0012: argument 0 'x': expected tensor<4xf32>");
  s.Annotatef("module '%s'", "m");
  EXPECT_EQ(s.ToString(),
            "INVALID_ARGUMENT: module 'm': main@0x0012: argument 0 'x': expected tensor<4xf32>");
  EXPECT_EQ(std::string(Status(StatusCode::kInternal).message()), "");
}

#else  // code-only build

TEST(StatusTest, CodeOnlyBuildDropsMessages) {
  Status s = InvalidArgumentError("argument %d '%s': expected %s", 0, "x",
                                  KILN_STATUS_TEXT(CountedText()));
  EXPECT_EQ(g_text_calls, 0) << "KILN_STATUS_TEXT evaluated its argument";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // The message is the code's name, never empty.
  EXPECT_EQ(std::string(s.message()), "INVALID_ARGUMENT");
  s.Annotate("main@0x0012");
  s.Annotatef("module '%s'", "m");
  EXPECT_EQ(std::string(s.message()), "INVALID_ARGUMENT");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT");
  EXPECT_EQ(std::string(MakeStatus(StatusCode::kOutOfRange, "offset %d", 9).message()),
            "OUT_OF_RANGE");
  EXPECT_EQ(std::string(Status(StatusCode::kDataLoss, std::string("bytes")).message()), "DATA_LOSS");
}

#endif

}  // namespace
}  // namespace kiln
