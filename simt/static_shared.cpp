// Static `__shared__` variables: simt.h declares them `static` with the ABI tag "simt_shared",
// which puts "B11simt_shared" into their mangled names (templates' and inline functions'
// statics too, where GCC ignores a section attribute). Their addresses and sizes come from the
// executable's own symbol table, read once; the scheduler poisons them at every block start,
// so each block sees fresh shared memory, and the checks (sanitizer.cpp) know them as shared.
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "simt/sanitizer.h"

namespace simt::detail {
namespace {

std::vector<SharedRange> g_ranges;
bool g_scanned = false;

int main_bias(dl_phdr_info* info, size_t, void* out) {
  *static_cast<uintptr_t*>(out) = info->dlpi_addr;  // the first object is the executable
  return 1;
}

// Reads the section headers and .symtab of /proc/self/exe; any failure leaves no ranges.
void scan() {
  std::FILE* f = std::fopen("/proc/self/exe", "rb");
  if (!f) return;
  std::vector<char> img;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) img.insert(img.end(), buf, buf + n);
  std::fclose(f);
  if (img.size() < sizeof(Elf64_Ehdr) || std::memcmp(img.data(), ELFMAG, SELFMAG) != 0) return;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(img.data());
  if (eh->e_shoff == 0 || eh->e_shoff + size_t(eh->e_shnum) * sizeof(Elf64_Shdr) > img.size()) return;
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(img.data() + eh->e_shoff);
  uintptr_t bias = 0;
  if (eh->e_type == ET_DYN) dl_iterate_phdr(main_bias, &bias);
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strs = sh[sh[i].sh_link];
    if (sh[i].sh_offset + sh[i].sh_size > img.size() || strs.sh_offset + strs.sh_size > img.size()) return;
    const auto* sym = reinterpret_cast<const Elf64_Sym*>(img.data() + sh[i].sh_offset);
    const char* names = img.data() + strs.sh_offset;
    for (size_t s = 0; s < sh[i].sh_size / sizeof(Elf64_Sym); ++s) {
      if (ELF64_ST_TYPE(sym[s].st_info) != STT_OBJECT || sym[s].st_size == 0 || sym[s].st_name >= strs.sh_size)
        continue;
      if (!std::strstr(names + sym[s].st_name, "B11simt_shared")) continue;
      const uintptr_t lo = bias + sym[s].st_value;
      g_ranges.push_back(SharedRange{lo, lo + sym[s].st_size, std::string(names + sym[s].st_name)});
    }
  }
  std::sort(g_ranges.begin(), g_ranges.end(), [](const SharedRange& a, const SharedRange& b) { return a.lo < b.lo; });
  // One variable can appear twice (a local and a global symbol for the same object).
  g_ranges.erase(std::unique(g_ranges.begin(), g_ranges.end(),
                             [](const SharedRange& a, const SharedRange& b) { return a.lo == b.lo; }),
                 g_ranges.end());
}

}  // namespace

const std::vector<SharedRange>& static_shared_ranges() {
  if (!g_scanned) {
    g_scanned = true;
    scan();
  }
  return g_ranges;
}

void poison_static_shared() {
  for (const SharedRange& r : static_shared_ranges()) std::memset(reinterpret_cast<void*>(r.lo), 0xFF, r.hi - r.lo);
}

}  // namespace simt::detail
