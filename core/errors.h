// Error kinds that reach main. A UsageError is the user's to fix (bad flag, bad input file):
// one line, exit code 2, nothing written. Anything else is ours or the machine's: exit code 1.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace grpo {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `text` with every control character escaped (\n, \r, \t, else \xNN), so that an error message
// quoting user input (a path or flag value holding a newline) stays one line on stderr.
inline std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace grpo
