// Runtime diagnostics: one process-wide sink for messages the runtime emits
// outside of a returned Status (Vulkan validation and loader messages, misuse
// such as a double release). The C API exposes it as kiln_set_log_callback.
//
// Default sink: stderr, one line "kiln: <source>: <message>". Thread-safe:
// the sink is swapped atomically; messages may arrive on any thread
// (validation messages come from the driver's threads too).
#ifndef KILN_BASE_LOG_H_
#define KILN_BASE_LOG_H_

namespace kiln {

// Numbering equals kiln_log_level_t.
enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2 };

// `source`: "vulkan validation", "vulkan loader", "vulkan", "runtime".
using LogSink = void (*)(void* user_data, LogLevel level, const char* source,
                         const char* message);

// Replaces the sink (null: the default stderr sink). Messages being
// delivered concurrently may still reach the previous sink.
void SetLogSink(LogSink sink, void* user_data);

// Formats (printf-style; at most 4 KiB, longer messages are cut) and
// delivers one message. No heap allocation.
void Log(LogLevel level, const char* source, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace kiln

#endif  // KILN_BASE_LOG_H_
