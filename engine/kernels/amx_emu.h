// A software model of the AMX tile instructions (palette 1: eight tiles of
// up to 16 rows x 64 bytes), as the Intel SDM defines them, spelled as GCC's
// intrinsics: _tile_loadconfig, _tile_storeconfig, _tile_release,
// _tile_loadd, _tile_stream_loadd, _tile_stored, _tile_zero, _tile_dpbssd,
// _tile_dpbsud, _tile_dpbusd, _tile_dpbuud, _tile_dpbf16ps. As in GCC, the
// tile operands are register numbers 0-7, not values.
//
// amx_intrin.h includes this instead of <immintrin.h>'s AMX part when
// ELLM_AMX_EMULATED is defined: a test build then compiles the AMX kernel
// files against it and runs them on any x86-64 machine (tests/CMakeLists.txt,
// ellm_kernels_emulated_amx). Never linked into the product.
//
// What the model does, instruction by instruction (SDM vol. 2, "Intel AMX
// instructions"):
//   LDTILECFG   palette 0 returns to the init state; palette 1 sets rows and
//               colsb of tiles 0-7 and zeroes every tile. A config the
//               hardware rejects (#GP: palette > 1, reserved bytes set,
//               rows > 16, colsb > 64, rows or colsb zero but not both,
//               tiles 8-15 configured) faults here too.
//   TILELOADD   rows start_row .. rows - 1 of colsb bytes each, row r from
//               base + r * stride; the rest of the tile (bytes past colsb,
//               rows past rows) becomes zero. TILESTORED writes the same
//               rows and bytes; TILEZERO zeroes the tile.
//   TDPB[SU][SU]D  C[m][n] += sum over k of 4 byte products (A's bytes
//               signed for S, unsigned for U, first letter A = tsrc1, second
//               B = tsrc2), in 32-bit arithmetic that wraps.
//   TDPBF16PS   per C element, two FP32 accumulators (even and odd bf16 of
//               each pair) start at zero and take one FMA per k; their sum
//               is then added to C. Every FMA and add: round to nearest
//               even, denormal inputs read as zero, denormal results
//               flushed to zero (DAZ = FTZ = 1); MXCSR is neither read nor
//               changed. The model runs each of those operations as the
//               host's own scalar FMA / add under DAZ and FTZ (x86's
//               tininess after rounding). NaN payloads propagate as the
//               host's scalar FMA propagates them; the SDM does not say
//               which NaN TDPBF16PS returns, and the kernels feed none.
//   Every tile instruction then resets start_row to 0. The #UD cases the
//   SDM lists (no config, an unconfigured tile, shapes that do not match:
//   C.rows != A.rows, A.colsb != 4 * B.rows, C.colsb != B.colsb, colsb not a
//   multiple of 4, repeated registers) print what went wrong and abort, as
//   the hardware would stop the process.
//
// Tile state is per thread (thread_local), as tile registers are. Memory is
// moved with memcpy: no alignment is required and no type punning occurs.
#pragma once

#include <immintrin.h>  // first: GCC's own _tile_* macros are replaced below

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ellm::kernels::amx_emu {

inline constexpr int kTiles = 8;
inline constexpr int kMaxRows = 16;
inline constexpr int kMaxColsb = 64;

// LDTILECFG's 64-byte memory operand.
struct TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

struct TileState {
  bool configured = false;
  TileConfig config{};
  uint8_t tile[kTiles][kMaxRows][kMaxColsb]{};
};

// This thread's tile registers.
inline TileState& State() {
  thread_local TileState state;
  return state;
}

[[noreturn]] inline void Fault(const char* insn, const char* why) {
  std::fprintf(stderr, "amx_emu: %s: %s (the hardware raises #UD or #GP)\n", insn, why);
  std::abort();
}

// ---- configuration ----

inline void Release() {
  TileState& s = State();
  s.configured = false;
  s.config = TileConfig{};
  std::memset(s.tile, 0, sizeof(s.tile));
}

inline void LoadConfig(const void* mem) {
  TileConfig c;
  std::memcpy(&c, mem, sizeof(c));
  if (c.palette_id == 0) return Release();
  if (c.palette_id > 1) Fault("ldtilecfg", "palette_id > 1");
  for (uint8_t b : c.reserved) {
    if (b != 0) Fault("ldtilecfg", "reserved bytes 2-15 not zero");
  }
  for (int i = 0; i < 16; ++i) {
    if (i >= kTiles) {
      if (c.rows[i] != 0 || c.colsb[i] != 0) Fault("ldtilecfg", "tile 8-15 configured");
      continue;
    }
    if (c.rows[i] > kMaxRows) Fault("ldtilecfg", "rows > 16");
    if (c.colsb[i] > kMaxColsb) Fault("ldtilecfg", "colsb > 64");
    if ((c.rows[i] == 0) != (c.colsb[i] == 0)) Fault("ldtilecfg", "rows or colsb zero, not both");
  }
  TileState& s = State();
  s.configured = true;
  s.config = c;
  std::memset(s.tile, 0, sizeof(s.tile));
}

inline void StoreConfig(void* mem) {
  const TileState& s = State();
  const TileConfig zero{};
  std::memcpy(mem, s.configured ? &s.config : &zero, sizeof(TileConfig));
}

// ---- moves ----

inline void CheckTile(const char* insn, int t) {
  const TileState& s = State();
  if (!s.configured) Fault(insn, "no tile configuration loaded");
  if (t < 0 || t >= kTiles) Fault(insn, "no such tile register");
  if (s.config.rows[t] == 0) Fault(insn, "tile not configured");
}

inline void LoadD(int t, const void* base, long stride) {
  CheckTile("tileloadd", t);
  TileState& s = State();
  const int rows = s.config.rows[t], colsb = s.config.colsb[t];
  const auto* p = static_cast<const uint8_t*>(base);
  for (int r = 0; r < kMaxRows; ++r) {
    uint8_t* row = s.tile[t][r];
    if (r >= rows) {
      std::memset(row, 0, kMaxColsb);
      continue;
    }
    if (r >= s.config.start_row) {
      std::memcpy(row, p + static_cast<ptrdiff_t>(r) * stride, static_cast<size_t>(colsb));
    }
    std::memset(row + colsb, 0, static_cast<size_t>(kMaxColsb - colsb));
  }
  s.config.start_row = 0;
}

inline void StoreD(int t, void* base, long stride) {
  CheckTile("tilestored", t);
  TileState& s = State();
  auto* p = static_cast<uint8_t*>(base);
  for (int r = s.config.start_row; r < s.config.rows[t]; ++r) {
    std::memcpy(p + static_cast<ptrdiff_t>(r) * stride, s.tile[t][r], s.config.colsb[t]);
  }
  s.config.start_row = 0;
}

inline void Zero(int t) {
  CheckTile("tilezero", t);
  TileState& s = State();
  std::memset(s.tile[t], 0, sizeof(s.tile[t]));
  s.config.start_row = 0;
}

// ---- dot products ----

// The #UD checks shared by every TDP* instruction: C = tsrcdest (M x N
// dwords), A = tsrc1 (M x K dwords), B = tsrc2 (K rows x N dwords).
inline void CheckDot(const char* insn, int c, int a, int b) {
  CheckTile(insn, c);
  CheckTile(insn, a);
  CheckTile(insn, b);
  if (c == a || c == b || a == b) Fault(insn, "tile registers not distinct");
  const TileConfig& k = State().config;
  if (k.colsb[c] % 4 != 0 || k.colsb[a] % 4 != 0 || k.colsb[b] % 4 != 0) {
    Fault(insn, "colsb not a multiple of 4");
  }
  if (k.rows[c] != k.rows[a]) Fault(insn, "tsrcdest.rows != tsrc1.rows");
  if (k.colsb[a] / 4 != k.rows[b]) Fault(insn, "tsrc1.colsb / 4 != tsrc2.rows");
  if (k.colsb[c] != k.colsb[b]) Fault(insn, "tsrcdest.colsb != tsrc2.colsb");
}

inline uint32_t Dword(const uint8_t* row, int i) {
  uint32_t v;
  std::memcpy(&v, row + 4 * i, 4);
  return v;
}
inline void SetDword(uint8_t* row, int i, uint32_t v) { std::memcpy(row + 4 * i, &v, 4); }

// The rows of tsrcdest past its colsb and rows become zero.
inline void ZeroUpper(int c) {
  TileState& s = State();
  const int rows = s.config.rows[c], colsb = s.config.colsb[c];
  for (int r = 0; r < kMaxRows; ++r) {
    if (r >= rows) {
      std::memset(s.tile[c][r], 0, kMaxColsb);
    } else {
      std::memset(s.tile[c][r] + colsb, 0, static_cast<size_t>(kMaxColsb - colsb));
    }
  }
  s.config.start_row = 0;
}

// kASigned / kBSigned: how A's and B's bytes are read.
template <bool kASigned, bool kBSigned>
inline void DotBytes(const char* insn, int c, int a, int b) {
  CheckDot(insn, c, a, b);
  TileState& s = State();
  const int m_rows = s.config.rows[c], n_dwords = s.config.colsb[c] / 4;
  const int k_dwords = s.config.colsb[a] / 4;
  const auto value = [](uint8_t x, bool is_signed) -> int32_t {
    return is_signed ? static_cast<int32_t>(static_cast<int8_t>(x)) : static_cast<int32_t>(x);
  };
  for (int m = 0; m < m_rows; ++m) {
    for (int n = 0; n < n_dwords; ++n) {
      uint32_t acc = Dword(s.tile[c][m], n);
      for (int k = 0; k < k_dwords; ++k) {
        const uint8_t* x = s.tile[a][m] + 4 * k;
        const uint8_t* y = s.tile[b][k] + 4 * n;
        for (int i = 0; i < 4; ++i) {
          // |product| <= 2^16: exact in int32; the sum wraps in uint32.
          acc += static_cast<uint32_t>(value(x[i], kASigned) * value(y[i], kBSigned));
        }
      }
      SetDword(s.tile[c][m], n, acc);
    }
  }
  ZeroUpper(c);
}

// FP32 a * b + acc and a + b, rounded to nearest even, with DAZ and FTZ,
// as the host's scalar instructions compute them under that MXCSR; the
// caller's MXCSR (mode and flags) is restored.
inline constexpr unsigned kMxcsrDazFtz = 0x1F80u | 0x8000u | 0x0040u;  // all masked, RNE
inline float FmaDazFtz(float acc, float a, float b) {
  unsigned saved;
  const unsigned mode = kMxcsrDazFtz;
  __asm__ volatile(
      "vstmxcsr %[saved]\n\t"
      "vldmxcsr %[mode]\n\t"
      "vfmadd231ss %[b], %[a], %[acc]\n\t"
      "vldmxcsr %[saved]"
      : [acc] "+x"(acc), [saved] "=m"(saved)
      : [a] "x"(a), [b] "x"(b), [mode] "m"(mode));
  return acc;
}
inline float AddDazFtz(float a, float b) {
  unsigned saved;
  const unsigned mode = kMxcsrDazFtz;
  __asm__ volatile(
      "vstmxcsr %[saved]\n\t"
      "vldmxcsr %[mode]\n\t"
      "vaddss %[b], %[a], %[a]\n\t"
      "vldmxcsr %[saved]"
      : [a] "+x"(a), [saved] "=m"(saved)
      : [b] "x"(b), [mode] "m"(mode));
  return a;
}

// bf16 (the high half of an FP32) to FP32: make_fp32 in the SDM.
inline float Bf16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline void DotBf16(int c, int a, int b) {
  CheckDot("tdpbf16ps", c, a, b);
  TileState& s = State();
  const int m_rows = s.config.rows[c], n_dwords = s.config.colsb[c] / 4;
  const int k_dwords = s.config.colsb[a] / 4;
  for (int m = 0; m < m_rows; ++m) {
    for (int n = 0; n < n_dwords; ++n) {
      float even = 0.0f, odd = 0.0f;
      for (int k = 0; k < k_dwords; ++k) {
        const uint8_t* x = s.tile[a][m] + 4 * k;
        const uint8_t* y = s.tile[b][k] + 4 * n;
        even = FmaDazFtz(even, Bf16(x), Bf16(y));
        odd = FmaDazFtz(odd, Bf16(x + 2), Bf16(y + 2));
      }
      float dest;
      std::memcpy(&dest, s.tile[c][m] + 4 * n, 4);
      dest = AddDazFtz(dest, AddDazFtz(even, odd));
      std::memcpy(s.tile[c][m] + 4 * n, &dest, 4);
    }
  }
  ZeroUpper(c);
}

}  // namespace ellm::kernels::amx_emu

// GCC's spelling (<immintrin.h> defines these as macros and inline functions
// when it is built for AMX; the model's replace them).
#undef _tile_loadconfig
#undef _tile_storeconfig
#undef _tile_release
#undef _tile_loadd
#undef _tile_stream_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud
#undef _tile_dpbf16ps
#define _tile_loadconfig(config) ::ellm::kernels::amx_emu::LoadConfig(config)
#define _tile_storeconfig(config) ::ellm::kernels::amx_emu::StoreConfig(config)
#define _tile_release() ::ellm::kernels::amx_emu::Release()
#define _tile_loadd(dst, base, stride) \
  ::ellm::kernels::amx_emu::LoadD(dst, base, static_cast<long>(stride))
#define _tile_stream_loadd(dst, base, stride) \
  ::ellm::kernels::amx_emu::LoadD(dst, base, static_cast<long>(stride))
#define _tile_stored(dst, base, stride) \
  ::ellm::kernels::amx_emu::StoreD(dst, base, static_cast<long>(stride))
#define _tile_zero(dst) ::ellm::kernels::amx_emu::Zero(dst)
#define _tile_dpbssd(dst, src1, src2) \
  ::ellm::kernels::amx_emu::DotBytes<true, true>("tdpbssd", dst, src1, src2)
#define _tile_dpbsud(dst, src1, src2) \
  ::ellm::kernels::amx_emu::DotBytes<true, false>("tdpbsud", dst, src1, src2)
#define _tile_dpbusd(dst, src1, src2) \
  ::ellm::kernels::amx_emu::DotBytes<false, true>("tdpbusd", dst, src1, src2)
#define _tile_dpbuud(dst, src1, src2) \
  ::ellm::kernels::amx_emu::DotBytes<false, false>("tdpbuud", dst, src1, src2)
#define _tile_dpbf16ps(dst, src1, src2) ::ellm::kernels::amx_emu::DotBf16(dst, src1, src2)
