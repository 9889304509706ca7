// AVX-512 VNNI packed GEMM for 2 to kDuoMaxTokens tokens (batched decode):
// Q8_0, Q5_0, Q4_0, IQ4_NL, Q4_K, Q5_K, Q6_K, Q3_K, Q2_K and IQ4_XS. The driver of
// gemm_packed_avx512_common.h (Gemm) hands these products here for the
// kernels of gemm_packed_avx512.cc that name a kDuoType.
//
// Two to kDuoMaxTokens tokens read the stored groups one at a time, in
// memory order (up to kTile per pass over a group). A ZMM holds one chunk of a group's 8 rows with
// each row's dword twice (lanes 2r and 2r + 1) against two tokens' dwords alternating (token 2p in
// the even lanes, 2p + 1 in the odd: one 8-byte broadcast), so each VPDPBUSD still does 16 lanes of
// products and the float work per block still runs on 16 lanes, as the pair kernels'. Reading a
// pair of groups instead means two streams 1-5 KiB apart, which the memory system serves far worse
// than one (Gemma 3's 262144 x 640 Q8_0 output matrix, one thread, Zen 5 VM: 1 token 5.0-5.2 ms; 4
// tokens 8.2-9.3 ms as group pairs, 5.2-5.3 ms one group at a time).
//
// The activations come from a table built once per thread per product
// (GemmActivations::id), one record per block of 4-byte words: the 8
// chunks' dwords of every token [8][2 * pairs] (an odd last token pairs
// with zeros), then per token pair its two biases (kBias times the block
// sum, i32), then per pair its two d (f32).
// Up to kDuoMaxTokens tokens run in passes of up to kTile over each group
// (the second pass reads the group from L1); the table holds one part per
// pass, each laid out for its own number of pairs, a pass's part
// DuoPassBytes* apart.
//
// Each lane's integer and float work is the pair kernels' for its row and
// token (gemm_packed_avx512.cc has the bounds; built with
// -ffp-contract=off), so results equal theirs, and RefVecDot's, bit for bit.
#include "kernels/gemm_packed_isa.h"

#include "kernels/avx512_intrin.h"
#include "kernels/isa_target.h"

#if defined(ELLM_AVX512_VNNI_KERNELS)

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/gemm_packed_avx512_common.h"
#include "kernels/gemm_packed_avx512_pairs.h"
#include "quant/q8_0.h"
#include "quant/q8_k.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)

namespace ellm::kernels::internal {
namespace {

// ---- the activation table ----

inline size_t DuoRecordBytes(int pairs) { return static_cast<size_t>(4 * (16 + 4) * pairs); }
inline size_t DuoPassBytes32(int64_t cols) { return DuoRecordBytes(kTile / 2) * (cols / 32); }
// This thread's table for Q8_0 activations `a`, built unless it already
// holds a's (for the same bias; id 0 always builds).
inline const uint8_t* DuoTable32(const GemmActivations& a, int64_t cols, int bias) {
  struct Cache {
    uint64_t id = 0;
    int64_t cols = 0;
    int bias = 0;
    ThreadBuffer buf;
  };
  thread_local Cache cache;
  const int64_t nb = cols / 32;
  const int n_all = static_cast<int>(a.n_tokens);
  const int passes = (n_all + kTile - 1) / kTile;
  uint8_t* table = cache.buf.Get(DuoPassBytes32(cols) * static_cast<size_t>(passes));
  if (a.id != 0 && cache.id == a.id && cache.cols == cols && cache.bias == bias) return table;
  for (int pass = 0; pass < passes; ++pass) {
    const int t0 = pass * kTile, n = std::min(kTile, n_all - t0), pairs = (n + 1) / 2;
    const size_t rec_bytes = DuoRecordBytes(pairs);
    uint8_t* part = table + pass * DuoPassBytes32(cols);
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* rec = part + static_cast<size_t>(b) * rec_bytes;
      for (int t = 0; t < 2 * pairs; ++t) {
        const int64_t row = t0 + t;
        const int8_t* qs =
            t < n ? reinterpret_cast<const BlockQ8_0*>(a.rows + row * a.stride)[b].qs : nullptr;
        for (int c = 0; c < 8; ++c) {
          int32_t v = 0;
          if (qs != nullptr) std::memcpy(&v, qs + 4 * c, 4);
          std::memcpy(rec + 4 * (c * 2 * pairs + t), &v, 4);
        }
        const int32_t sum = t < n ? bias * a.block_sum[row * nb + b] : 0;
        const float d = t < n ? a.block_d[row * nb + b] : 0.0f;
        std::memcpy(rec + 4 * (16 * pairs + t), &sum, 4);
        std::memcpy(rec + 4 * (18 * pairs + t), &d, 4);
      }
    }
  }
  cache.id = a.id;
  cache.cols = cols;
  cache.bias = bias;
  return table;
}

// Q8_K activations (the K-quants): per super-block, the 64 quant dwords
// [64][2 * pairs], the 8 bsum pairs (two i16 as one word) [8][2 * pairs],
// then d [2 * pairs].
inline size_t DuoRecordBytesK(int pairs) {
  return static_cast<size_t>(4 * (64 + 8 + 1) * 2 * pairs);
}
inline size_t DuoPassBytesK(int64_t cols) { return DuoRecordBytesK(kTile / 2) * (cols / kQkK); }
inline const uint8_t* DuoTableK(const GemmActivations& a, int64_t cols) {
  struct Cache {
    uint64_t id = 0;
    int64_t cols = 0;
    ThreadBuffer buf;
  };
  thread_local Cache cache;
  const int64_t ns = cols / kQkK;
  const int n_all = static_cast<int>(a.n_tokens);
  const int passes = (n_all + kTile - 1) / kTile;
  uint8_t* table = cache.buf.Get(DuoPassBytesK(cols) * static_cast<size_t>(passes));
  if (a.id != 0 && cache.id == a.id && cache.cols == cols) return table;
  for (int pass = 0; pass < passes; ++pass) {
    const int t0 = pass * kTile, n = std::min(kTile, n_all - t0), pairs = (n + 1) / 2;
    const size_t rec_bytes = DuoRecordBytesK(pairs);
    uint8_t* part = table + pass * DuoPassBytesK(cols);
    const int w = 2 * pairs;  // words per row of the record
    for (int64_t s = 0; s < ns; ++s) {
      uint8_t* rec = part + static_cast<size_t>(s) * rec_bytes;
      for (int t = 0; t < w; ++t) {
        const BlockQ8_K* blk =
            t < n ? reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride) + s : nullptr;
        for (int k = 0; k < 64; ++k) {
          int32_t v = 0;
          if (blk != nullptr) std::memcpy(&v, blk->qs + 4 * k, 4);
          std::memcpy(rec + 4 * (k * w + t), &v, 4);
        }
        for (int k = 0; k < 8; ++k) {
          int32_t v = 0;
          if (blk != nullptr) std::memcpy(&v, blk->bsums + 2 * k, 4);
          std::memcpy(rec + 4 * ((64 + k) * w + t), &v, 4);
        }
        const float d = blk != nullptr ? blk->d : 0.0f;
        std::memcpy(rec + 4 * (72 * w + t), &d, 4);
      }
    }
  }
  cache.id = a.id;
  cache.cols = cols;
  return table;
}
// 8 bytes at p broadcast to every 64-bit lane.
inline __m512i Bcast8(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi64(v);
}
// Chunk c's dwords of token pair p, alternating; the pair's biases; its d.
inline __m512i DuoChunk(const uint8_t* rec, int pairs, int c, int p) {
  return Bcast8(rec + 4 * (c * 2 * pairs + 2 * p));
}
inline __m512i DuoBias(const uint8_t* rec, int pairs, int p) {
  return Bcast8(rec + 4 * (16 * pairs + 2 * p));
}
inline __m512 DuoD(const uint8_t* rec, int pairs, int p) {
  return _mm512_castsi512_ps(Bcast8(rec + 4 * (18 * pairs + 2 * p)));
}
// Word k of a Q8_K record (quant dword k < 64, bsum pair 64 + j, d 72) of
// token pair p, alternating.
inline __m512i DuoWordK(const uint8_t* rec, int pairs, int k, int p) {
  return Bcast8(rec + 4 * (k * 2 * pairs + 2 * p));
}
// Lanes 0-7 of v, each twice (lane r to lanes 2r and 2r + 1).
inline __m512i DupLanes(__m512i v) {
  return _mm512_permutexvar_epi32(_mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
                                  v);
}
inline __m512 DupLanes(__m512 v) { return _mm512_castsi512_ps(DupLanes(_mm512_castps_si512(v))); }
// Stores P token pairs' sums, n tokens (2P - 1 or 2P): the even lanes of
// acc[p] (token 2p's 8 rows) at out + 2p * out_stride, the odd ones (token
// 2p + 1) at out + (2p + 1) * out_stride unless that token is past n.
template <int P>
inline void StoreDuos(const __m512 (&acc)[P], int n, float* out, int64_t out_stride) {
  const __m512i even = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int p = 0; p < P; ++p) {
    const __m512 split = _mm512_permutexvar_ps(even, acc[p]);
    _mm256_storeu_ps(out + 2 * p * out_stride, _mm512_castps512_ps256(split));
    if (2 * p + 1 < n) {
      _mm256_storeu_ps(out + (2 * p + 1) * out_stride, _mm512_extractf32x8_ps(split, 1));
    }
  }
}

// ---- Q8_0, Q5_0, Q4_0, IQ4_NL against Q8_0 ----

// P token pairs (2P - 1 or 2P tokens: n) against one stored group g (its
// chunks as the pair (g, g), low halves used), the activations from
// DuoTable32. Each lane's arithmetic is Tile32's for its row and token, so
// its bits too.
template <int kOffset, int P>
void Tile32Duo(const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n, float* out,
               int64_t out_stride) {
  const int64_t nb = w.cols / 32;
  const size_t q_base = PackedScaleBytes32(nb);
  const size_t rec_bytes = DuoRecordBytes(P);
  const GroupPrefetch next(w, 1, nb);
  __m512 acc[P];
  for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    next(g, b);
    const uint8_t* rec = table + static_cast<size_t>(b) * rec_bytes;
    __m512i isum[P];
    for (int p = 0; p < P; ++p) isum[p] = _mm512_setzero_si512();
    const size_t q = q_base + static_cast<size_t>(b) * StoredBlock32Bytes(kOffset);
    StoredBlock32<kOffset>(g + q, g + q, [&](__m512i wq, int c) {
      const __m512i w2 = DupLanes(wq);
      for (int p = 0; p < P; ++p)
        isum[p] = _mm512_dpbusd_epi32(isum[p], w2, DuoChunk(rec, P, c, p));
    });
    const __m512 wd = _mm512_castsi512_ps(DupLanes(_mm512_castps_si512(
        _mm512_castps256_ps512(_mm256_cvtph_ps(Load128(g + 2 * kPackRows * b))))));
    for (int p = 0; p < P; ++p) {
      const __m512i ints = _mm512_sub_epi32(isum[p], DuoBias(rec, P, p));
      const __m512 da = DuoD(rec, P, p);
      const __m512 fi = _mm512_cvtepi32_ps(ints);
      __m512 term;
      if constexpr (kOffset == 0) {
        term = _mm512_mul_ps(fi, _mm512_mul_ps(wd, da));  // as Tile32
      } else if constexpr (kOffset == 8) {
        term = _mm512_mul_ps(_mm512_mul_ps(fi, wd), da);
      } else {
        term = _mm512_mul_ps(_mm512_mul_ps(wd, da), fi);
      }
      acc[p] = _mm512_add_ps(acc[p], term);
    }
  }
  StoreDuos(acc, n, out, out_stride);
}

// ---- Q4_K, Q5_K and Q6_K against Q8_K ----

// TileQ4_K for P token pairs against one stored group g (the pair (g, g),
// each row-derived vector's low half with every lane twice: DupLanes), the
// activations from DuoTableK. Each lane's arithmetic is TileQ4_K's.
template <bool kFive, int P>
void TileQ4_KDuo(const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n, float* out,
                 int64_t out_stride) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const int64_t nsb = w.cols / kQkK;
  const size_t rec_bytes = DuoRecordBytesK(P);
  const GroupPrefetch next(w, 1, nsb);
  __m512 acc[P];
  for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    constexpr size_t kSbBytes = kFive ? kQ5KPackedBytes : kQ4KPackedBytes;
    const uint8_t* sb = g + s * kSbBytes;
    const uint8_t* rec = table + static_cast<size_t>(s) * rec_bytes;
    __m512i isum[P];
    for (int p = 0; p < P; ++p) isum[p] = _mm512_setzero_si512();
    for (int gi = 0; gi < 8; ++gi) {  // 32-element groups: low nibbles of pair gi/2, then high
      const int pq = gi / 2, shift = 4 * (gi % 2);
      __m512i dot[P];
      for (int p = 0; p < P; ++p) dot[p] = _mm512_setzero_si512();
      [[maybe_unused]] __m512i fifth;
      if constexpr (kFive) fifth = Load2(sb + kQ5KPackedH + 32 * gi, sb + kQ5KPackedH + 32 * gi);
      for (int c = 0; c < 8; ++c) {
        const size_t off = kQ4KPackedQ + 256 * pq + 32 * c;
        const __m512i v = Load2(sb + off, sb + off);
        __m512i nib = _mm512_and_si512(shift ? _mm512_srli_epi16(v, 4) : v, m4);
        if constexpr (kFive) nib = _mm512_or_si512(nib, FifthBits(fifth, c));
        const __m512i w2 = DupLanes(nib);
        for (int p = 0; p < P; ++p) {
          dot[p] = _mm512_dpbusd_epi32(dot[p], w2, DuoWordK(rec, P, 8 * gi + c, p));
        }
      }
      const __m512i sc = DupLanes(Q4_KScaleVector(sb, sb, gi));
      for (int p = 0; p < P; ++p)
        isum[p] = _mm512_add_epi32(isum[p], _mm512_mullo_epi32(dot[p], sc));
    }
    const __m512 d = DupLanes(Halves16(sb + kQ4KPackedD, sb + kQ4KPackedD));
    const __m512 dmin = DupLanes(Halves16(sb + kQ4KPackedDmin, sb + kQ4KPackedDmin));
    __m512i mins[8];
    for (int gi = 0; gi < 8; ++gi) mins[gi] = DupLanes(Q4_KMinVector(sb, sb, gi));
    for (int p = 0; p < P; ++p) {
      __m512i msum = _mm512_setzero_si512();
      for (int gi = 0; gi < 8; ++gi) {
        msum = _mm512_dpwssd_epi32(msum, mins[gi], DuoWordK(rec, P, 64 + gi, p));
      }
      const __m512 da = _mm512_castsi512_ps(DuoWordK(rec, P, 72, p));
      const __m512 x =
          _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum[p])),
                        _mm512_mul_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(msum)));
      acc[p] = _mm512_add_ps(acc[p], x);
    }
  }
  StoreDuos(acc, n, out, out_stride);
}

// Both helpers are forced inline: as plain calls GCC's code for TileQ3_KDuo
// ran 13% slower (8 streams, one thread, Zen 5 VM).
// The 4 chunks wq of a 16-element group (rows' dwords in lanes 0-7) against
// every token pair's chunk words k0 .. k0 + 3: isum[p] += dot * sc.
template <int P>
[[gnu::always_inline]] inline void AddGroupDots(const __m512i (&wq)[4], const uint8_t* rec, int k0,
                                                __m512i sc, __m512i (&isum)[P]) {
  __m512i dot[P];
  for (int p = 0; p < P; ++p) dot[p] = _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c) {
    const __m512i w2 = DupLanes(wq[c]);
    for (int p = 0; p < P; ++p) {
      dot[p] = _mm512_dpbusd_epi32(dot[p], w2, DuoWordK(rec, P, k0 + c, p));
    }
  }
  for (int p = 0; p < P; ++p) isum[p] = _mm512_add_epi32(isum[p], _mm512_mullo_epi32(dot[p], sc));
}
// The end of a super-block (Q6_K, Q3_K, IQ4_XS): acc[p] += (d * y.d) * isum.
template <int P>
[[gnu::always_inline]] inline void AddScaledSums(__m512 d, const uint8_t* rec,
                                                 const __m512i (&isum)[P], __m512 (&acc)[P]) {
  for (int p = 0; p < P; ++p) {
    const __m512 da = _mm512_castsi512_ps(DuoWordK(rec, P, 72, p));
    acc[p] =
        _mm512_add_ps(acc[p], _mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum[p])));
  }
}

// TileQ6_K for P token pairs against one stored group g, as TileQ4_KDuo.
template <int P>
void TileQ6_KDuo(const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = w.cols / kQkK;
  const size_t rec_bytes = DuoRecordBytesK(P);
  const GroupPrefetch next(w, 1, nsb);
  __m512 acc[P];
  for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kQ6KStoredBytes;
    const uint8_t* rec = table + static_cast<size_t>(s) * rec_bytes;
    __m512i isum[P];
    for (int p = 0; p < P; ++p) isum[p] = _mm512_setzero_si512();
    for (int pq = 0; pq < 8; ++pq) {  // pairs of 16-element groups
      const size_t sc_off = kQ6KPackedSc + 16 * pq;
      const __m512i pair = _mm512_cvtepi8_epi16(Load2x16(sb + sc_off, sb + sc_off));
      const __m512i neg32 =
          DupLanes(_mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 5)));
      for (int p = 0; p < P; ++p) {
        isum[p] = _mm512_dpwssd_epi32(isum[p], neg32, DuoWordK(rec, P, 64 + pq, p));
      }
      for (int k = 0; k < 2; ++k) {
        const __m512i sc = DupLanes(k == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                           : _mm512_srai_epi32(pair, 16));
        const int gi = 2 * pq + k;
        __m512i wq[4];
        const size_t off = kQ6KStoredGroups + kQ6KStoredGroupBytes * gi;
        Q6_KChunks(sb + off, sb + off, wq);
        AddGroupDots<P>(wq, rec, 4 * gi, sc, isum);
      }
    }
    const __m512 d = DupLanes(Halves16(sb + kQ6KPackedD, sb + kQ6KPackedD));
    AddScaledSums<P>(d, rec, isum, acc);
  }
  StoreDuos(acc, n, out, out_stride);
}

// TileQ3_K for P token pairs against one stored group g (its chunks as the
// pair (g, g), low halves used, each lane twice: DupLanes), as TileQ6_KDuo;
// each lane's arithmetic is TileQ3_K's.
template <int P>
void TileQ3_KDuo(const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = w.cols / kQkK;
  const size_t rec_bytes = DuoRecordBytesK(P);
  const GroupPrefetch next(w, 1, nsb);
  __m512 acc[P];
  for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kQ3KStoredBytes;
    const uint8_t* rec = table + static_cast<size_t>(s) * rec_bytes;
    __m512i isum[P];
    for (int p = 0; p < P; ++p) isum[p] = _mm512_setzero_si512();
    for (int pq = 0; pq < 8; ++pq) {  // pairs of 16-element groups
      const __m128i sc16 = Q3_KScales16(sb, pq);
      const __m512i pair =
          _mm512_cvtepi8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(sc16), sc16, 1));
      const __m512i neg4 =
          DupLanes(_mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 2)));
      for (int p = 0; p < P; ++p) {
        isum[p] = _mm512_dpwssd_epi32(isum[p], neg4, DuoWordK(rec, P, 64 + pq, p));
      }
      for (int k = 0; k < 2; ++k) {
        const __m512i sc = DupLanes(k == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                           : _mm512_srai_epi32(pair, 16));
        const int gi = 2 * pq + k;
        __m512i wq[4];
        Q3_KChunks(sb, sb, gi, wq);
        AddGroupDots<P>(wq, rec, 4 * gi, sc, isum);
      }
    }
    const __m512 d = DupLanes(Halves16(sb, sb));
    AddScaledSums<P>(d, rec, isum, acc);
  }
  StoreDuos(acc, n, out, out_stride);
}

// TileQ2_K for P token pairs against one stored group g, as TileQ3_KDuo;
// each lane's arithmetic is TileQ2_K's.
template <int P>
void TileQ2_KDuo(const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n, float* out,
                 int64_t out_stride) {
  const int64_t nsb = w.cols / kQkK;
  const size_t rec_bytes = DuoRecordBytesK(P);
  const GroupPrefetch next(w, 1, nsb);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m512 acc[P];
  for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kQ2KStoredBytes;
    const uint8_t* rec = table + static_cast<size_t>(s) * rec_bytes;
    __m512i isum[P], msum[P];
    for (int p = 0; p < P; ++p) isum[p] = msum[p] = _mm512_setzero_si512();
    for (int pq = 0; pq < 8; ++pq) {  // pairs of 16-element groups
      const size_t off = kQ2KPackedSc + 16 * pq;
      const __m256i raw = Load2x16(sb + off, sb + off);
      const __m512i pair = _mm512_cvtepu8_epi16(_mm256_and_si256(raw, m4));
      const __m512i mins =
          DupLanes(_mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4)));
      for (int p = 0; p < P; ++p) {
        msum[p] = _mm512_dpwssd_epi32(msum[p], mins, DuoWordK(rec, P, 64 + pq, p));
      }
      for (int k = 0; k < 2; ++k) {
        const __m512i sc = DupLanes(k == 0 ? _mm512_and_si512(pair, _mm512_set1_epi32(0xffff))
                                           : _mm512_srli_epi32(pair, 16));
        const int gi = 2 * pq + k;
        __m512i wq[4];
        Q2_KChunks(sb, sb, gi, wq);
        AddGroupDots<P>(wq, rec, 4 * gi, sc, isum);
      }
    }
    const __m512 d = DupLanes(Halves16(sb + kQ2KPackedD, sb + kQ2KPackedD));
    const __m512 dmin = DupLanes(Halves16(sb + kQ2KPackedDmin, sb + kQ2KPackedDmin));
    for (int p = 0; p < P; ++p) {
      const __m512 da = _mm512_castsi512_ps(DuoWordK(rec, P, 72, p));
      const __m512 x =
          _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum[p])),
                        _mm512_mul_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(msum[p])));
      acc[p] = _mm512_add_ps(acc[p], x);
    }
  }
  StoreDuos(acc, n, out, out_stride);
}

// TileIq4Xs for P token pairs against one stored group g, as TileQ3_KDuo;
// each lane's arithmetic is TileIq4Xs's.
template <int P>
void TileIq4XsDuo(const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n, float* out,
                  int64_t out_stride) {
  const int64_t nsb = w.cols / kQkK;
  const size_t rec_bytes = DuoRecordBytesK(P);
  const GroupPrefetch next(w, 1, nsb);
  __m512 acc[P];
  for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kIq4XsStoredBytes;
    const uint8_t* rec = table + static_cast<size_t>(s) * rec_bytes;
    __m512i isum[P];
    for (int p = 0; p < P; ++p) isum[p] = _mm512_setzero_si512();
    for (int gi = 0; gi < 8; ++gi) {  // 32-element groups
      __m512i dot[P];
      for (int p = 0; p < P; ++p) dot[p] = _mm512_setzero_si512();
      const uint8_t* q = sb + kIq4XsPackedQ + kIq4XsStoredGroupBytes * gi;
      for (int c = 0; c < 4; ++c) {
        __m512i lo, hi;
        StoredChunks(q, q, c, &lo, &hi);
        const __m512i lo2 = DupLanes(lo), hi2 = DupLanes(hi);
        for (int p = 0; p < P; ++p) {
          dot[p] = _mm512_dpbusd_epi32(dot[p], lo2, DuoWordK(rec, P, 8 * gi + c, p));
          dot[p] = _mm512_dpbusd_epi32(dot[p], hi2, DuoWordK(rec, P, 8 * gi + c + 4, p));
        }
      }
      const __m512i pairs = DupLanes(ScalePairs(sb, sb, gi));
      const __m512i sc = _mm512_srai_epi32(pairs, 16);
      const __m512i neg128 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pairs, 7));
      for (int p = 0; p < P; ++p) {
        isum[p] = _mm512_add_epi32(isum[p], _mm512_mullo_epi32(dot[p], sc));
        isum[p] = _mm512_dpwssd_epi32(isum[p], neg128, DuoWordK(rec, P, 64 + gi, p));
      }
    }
    const __m512 d = DupLanes(Halves16(sb + kIq4XsPackedD, sb + kIq4XsPackedD));
    AddScaledSums<P>(d, rec, isum, acc);
  }
  StoreDuos(acc, n, out, out_stride);
}

// ---- the loop over groups and passes ----

// Runs Kernel::Run<P> for P = 1 .. kTile / 2 token pairs.
template <class Kernel, int P = kTile / 2>
void RunDuoN(int pairs, const PackedMatrix& w, const uint8_t* g, const uint8_t* table, int n,
             float* out, int64_t out_stride) {
  if constexpr (P > 1) {
    if (pairs < P) return RunDuoN<Kernel, P - 1>(pairs, w, g, table, n, out, out_stride);
  }
  Kernel::template Run<P>(w, g, table, n, out, out_stride);
}

// Every group of rows [row_begin, row_end) against 2 to kDuoMaxTokens
// tokens, in passes of up to kTile tokens over each group.
template <class Kernel>
void GemmDuo(const PackedMatrix& w, int64_t row_begin, int64_t row_end, const GemmActivations& a,
             float* y, int64_t y_stride) {
  const int64_t g_begin = row_begin / kPackRows;
  const int64_t g_end = (row_end + kPackRows - 1) / kPackRows;
  const uint8_t* table = Kernel::Table(a, w.cols);
  const size_t pass_bytes = Kernel::PassBytes(w.cols);
  const int n = static_cast<int>(a.n_tokens);
  alignas(64) float duo_out[kDuoMaxTokens * kPackRows];
  for (int64_t g = g_begin; g < g_end; ++g) {
    const int64_t r0 = std::max(row_begin, g * kPackRows);
    const int64_t r1 = std::min(row_end, (g + 1) * kPackRows);
    const bool whole = r1 - r0 == kPackRows;
    float* out = whole ? y + (r0 - row_begin) : duo_out;
    const int64_t os = whole ? y_stride : kPackRows;
    for (int t0 = 0, pass = 0; t0 < n; t0 += kTile, ++pass) {
      const int m = std::min(kTile, n - t0);
      RunDuoN<Kernel>((m + 1) / 2, w, w.Group(g), table + pass * pass_bytes, m, out + t0 * os, os);
    }
    if (whole) continue;
    for (int k = 0; k < n; ++k) {
      for (int64_t r = r0; r < r1; ++r) {
        y[k * y_stride + (r - row_begin)] = duo_out[k * kPackRows + (r - g * kPackRows)];
      }
    }
  }
}

// Every type's kernels, for GemmDuo: Run for P token pairs, the activation
// table it reads (Table) and the bytes of one pass's part of it.
//
// Q8_0 (kOffset 0), Q5_0, Q4_0, IQ4_NL: the table's biases are the ones
// their stored bytes carry, as Tile32's (Q8_0's flipped sign bit: 128).
template <int kOffset>
struct Block32Duo {
  static constexpr auto PassBytes = DuoPassBytes32;
  template <int P>
  static constexpr auto Run = Tile32Duo<kOffset, P>;
  static const uint8_t* Table(const GemmActivations& a, int64_t cols) {
    return DuoTable32(a, cols, kOffset == 0 ? 128 : kOffset);
  }
};
template <bool kFive>
struct Q4_KDuo {
  static constexpr auto PassBytes = DuoPassBytesK;
  template <int P>
  static constexpr auto Run = TileQ4_KDuo<kFive, P>;
  static constexpr auto Table = DuoTableK;
};
struct Q6_KDuo {
  static constexpr auto PassBytes = DuoPassBytesK;
  template <int P>
  static constexpr auto Run = TileQ6_KDuo<P>;
  static constexpr auto Table = DuoTableK;
};
struct Q3_KDuo {
  static constexpr auto PassBytes = DuoPassBytesK;
  template <int P>
  static constexpr auto Run = TileQ3_KDuo<P>;
  static constexpr auto Table = DuoTableK;
};
struct Q2_KDuo {
  static constexpr auto PassBytes = DuoPassBytesK;
  template <int P>
  static constexpr auto Run = TileQ2_KDuo<P>;
  static constexpr auto Table = DuoTableK;
};
struct Iq4XsDuo {
  static constexpr auto PassBytes = DuoPassBytesK;
  template <int P>
  static constexpr auto Run = TileIq4XsDuo<P>;
  static constexpr auto Table = DuoTableK;
};

}  // namespace

GemmPackedFn Avx512VnniGemmPackedDuo(quant::TensorType type) {
  using TT = quant::TensorType;
  switch (type) {
    case TT::kQ8_0:
      return GemmDuo<Block32Duo<0>>;
    case TT::kQ5_0:
      return GemmDuo<Block32Duo<16>>;
    case TT::kQ4_0:
      return GemmDuo<Block32Duo<8>>;
    case TT::kIQ4_NL:
      return GemmDuo<Block32Duo<kIq4NlOffset>>;
    case TT::kQ4_K:
      return GemmDuo<Q4_KDuo<false>>;
    case TT::kQ5_K:
      return GemmDuo<Q4_KDuo<true>>;
    case TT::kQ6_K:
      return GemmDuo<Q6_KDuo>;
    case TT::kQ3_K:
      return GemmDuo<Q3_KDuo>;
    case TT::kQ2_K:
      return GemmDuo<Q2_KDuo>;
    case TT::kIQ4_XS:
      return GemmDuo<Iq4XsDuo>;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512 VNNI

namespace ellm::kernels::internal {
GemmPackedFn Avx512VnniGemmPackedDuo(quant::TensorType) { return nullptr; }
}  // namespace ellm::kernels::internal

#endif
