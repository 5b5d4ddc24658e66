// <immintrin.h> for the host twins' run-time-dispatched AVX2 / AVX-512 paths. GCC 12's AVX-512
// intrinsics start from _mm512_undefined_*(), which -W(maybe-)uninitialized reports inside the
// header once they are inlined into a target("avx512f") function (GCC bug 105593).
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
