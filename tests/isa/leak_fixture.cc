// The mistake of issue 59, made on purpose for scripts/check-isa's own test
// (tests/isa/check_isa_test.sh). Built twice by tests/CMakeLists.txt: once
// as the AVX-512 kernel files used to be (-mavx512* flags for the whole
// file; -O0 with ASan and UBSan, as the sanitizer build that died of
// SIGILL), once for the baseline, the clean twin. Never linked.
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

// With the wide flags, GCC 12 emits libstdc++'s relocation helper of
// std::vector<uint32_t> as a weak symbol holding EVEX instructions: the
// copy the linker once kept for a whole test program.
void IsaLeakFixtureResize(std::vector<uint32_t>& v, size_t n) { v.resize(n); }

#if defined(__AVX512F__)
// An inline function of a header, emitted in a wide file: weak and wide.
inline __m512i IsaLeakFixtureAdd(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }

// Wide code outside the dispatched kernels.
void IsaLeakFixtureDouble(int32_t* out, const int32_t* a) {
  const __m512i v = _mm512_loadu_si512(a);
  _mm512_storeu_si512(out, IsaLeakFixtureAdd(v, v));
}

// Wide code where it may be: a dispatched kernel's entry point (check-isa
// must not name it).
namespace ellm::kernels::internal {
void IsaLeakFixtureKernel(int32_t* out, const int32_t* a) {
  _mm512_storeu_si512(out, _mm512_abs_epi32(_mm512_loadu_si512(a)));
}
}  // namespace ellm::kernels::internal
#endif
