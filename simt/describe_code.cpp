// file:line (function) for a code address, through addr2line: the reports' locations.
#include <dlfcn.h>
#include <elf.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "simt/sanitizer.h"

namespace simt::detail {

std::string describe_code(const void* pc) {
  Dl_info info{};
  char raw[40];
  std::snprintf(raw, sizeof raw, "%p", pc);
  if (!pc || !dladdr(pc, &info) || !info.dli_fbase) return raw;
  uintptr_t addr = reinterpret_cast<uintptr_t>(pc);
  if (reinterpret_cast<const Elf64_Ehdr*>(info.dli_fbase)->e_type == ET_DYN)
    addr -= reinterpret_cast<uintptr_t>(info.dli_fbase);
  const char* file = info.dli_fname && *info.dli_fname ? info.dli_fname : "/proc/self/exe";
  char cmd[600];
  std::snprintf(cmd, sizeof cmd, "addr2line -C -f -i -e '%s' 0x%" PRIxPTR " 2>/dev/null", file, addr);
  std::FILE* p = popen(cmd, "r");
  if (!p) return raw;
  std::vector<std::string> lines;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    lines.push_back(s);
  }
  pclose(p);
  if (lines.size() < 2 || lines[1].rfind("??", 0) == 0) return std::string(raw) + (lines.empty() ? "" : " " + lines[0]);
  // Pairs of (function, file:line), innermost inlined frame first.
  std::string out = lines[1] + " (" + lines[0] + ")";
  for (size_t i = 2; i + 1 < lines.size(); i += 2)
    out += "\n          inlined into " + lines[i + 1] + " (" + lines[i] + ")";
  return out;
}

}  // namespace simt::detail
