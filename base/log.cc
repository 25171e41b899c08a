#include "base/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace kiln {
namespace {

struct Sink {
  LogSink sink;
  void* user_data;
};

void StderrSink(void*, LogLevel, const char* source, const char* message) {
  std::fprintf(stderr, "kiln: %s: %s\n", source, message);
}

// Two slots and an index: SetLogSink writes the free slot, then publishes it.
Sink g_sinks[2] = {{StderrSink, nullptr}, {StderrSink, nullptr}};
std::atomic<int> g_current{0};

}  // namespace

void SetLogSink(LogSink sink, void* user_data) {
  int next = 1 - g_current.load(std::memory_order_acquire);
  g_sinks[next] = Sink{sink ? sink : StderrSink, sink ? user_data : nullptr};
  g_current.store(next, std::memory_order_release);
}

void Log(LogLevel level, const char* source, const char* format, ...) {
  char message[4096];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  Sink sink = g_sinks[g_current.load(std::memory_order_acquire)];
  sink.sink(sink.user_data, level, source, message);
}

}  // namespace kiln
