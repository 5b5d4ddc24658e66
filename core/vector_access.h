// Vector loads and stores (float4, uint2, ...) through a pointer of another type: the one way
// the kernels make them, so that the emulator can check what a GPU enforces. A GPU faults on a
// vector access whose address is not a multiple of its size; g++ splits such an access into its
// scalar fields, so the emulator's memory checks never see it, and in the simt flavour
// vector_at asks the emulator to check the address (simt::check_vector_access). On a GPU it is a
// plain cast.
#pragma once
#include <type_traits>

#include "core/host_device.h"

namespace grpo {

// p as a pointer to V (a vector type: float4, uint2, ...), which a GPU accesses whole.
template <class V, class P>
GRPO_HD V* vector_at(P* p) {
  static_assert(std::is_const<V>::value || !std::is_const<P>::value, "vector_at: would cast const away");
#if defined(GRPO_SIMT)
  simt::check_vector_access(p, sizeof(V));
#endif
  return reinterpret_cast<V*>(p);
}

}  // namespace grpo
