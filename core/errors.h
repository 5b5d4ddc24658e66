// Error kinds that reach main. A UsageError is the user's to fix (bad flag, bad input file):
// one line, exit code 2, nothing written. Anything else is ours or the machine's: exit code 1.
#pragma once
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace grpo {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `text` with every control character escaped (\n, \r, \t, else \xNN), so that an error message
// quoting user input (a path or flag value holding a newline) stays one line on stderr. That
// covers the C1 controls (U+0080..U+009F, NEL among them), the line and paragraph separators
// U+2028 and U+2029, and every byte that is not part of valid UTF-8; other UTF-8 passes as it is.
inline std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [&out](unsigned char u) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    out += buf;
  };
  for (size_t i = 0; i < text.size();) {
    const unsigned char u = static_cast<unsigned char>(text[i]);
    if (u < 0x80) {
      if (u == '\n')
        out += "\\n";
      else if (u == '\r')
        out += "\\r";
      else if (u == '\t')
        out += "\\t";
      else if (u < 0x20 || u == 0x7f)
        hex(u);
      else
        out += char(u);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, then continuation bytes 10xxxxxx.
    const size_t len = u >= 0xc2 && u <= 0xdf ? 2 : u >= 0xe0 && u <= 0xef ? 3 : u >= 0xf0 && u <= 0xf4 ? 4 : 0;
    uint32_t cp = len == 2 ? u & 0x1f : len == 3 ? u & 0x0f : u & 0x07;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char c = static_cast<unsigned char>(text[i + k]);
      ok = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      hex(u);
      ++i;
    } else if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029) {
      for (size_t k = 0; k < len; ++k) hex(static_cast<unsigned char>(text[i + k]));
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace grpo
