#!/usr/bin/env python3
"""Makes the golden files under tests/engine/quant/testdata/ that
quant_reference_test.cc compares our scalar decoders and encoders with.

The expected values come from an implementation that is not ours: the `gguf`
Python package (llama.cpp's gguf-py, `pip install gguf`), which decodes and
encodes with numpy. Where gguf has no implementation (it has no Q8_K or Q8_1
at all) this script computes the values itself with numpy, transcribing
ggml's quantize_row_q8_K_ref / quantize_row_q8_1_ref / dequantize_row_q8_K;
those files are marked "script" below rather than "gguf".

    python3 tests/engine/quant/make_reference.py   # rewrites testdata/*.bin

Deterministic (fixed seed). Made with gguf 0.19.0, numpy 2.4.

File layout, all little-endian:

  decode_<format>.bin    (DequantizeRow; source: gguf, except q8_k: script)
    char[4]  magic "ELQD"
    u32      version = 1
    u32      GGML type id (as in GGUF)
    u32      n_elems
    u32      n_bytes
    u8[n_bytes]    the row as stored: n_elems / block_elems blocks of
                   block_bytes each. Quant bytes are random; every f16/f32
                   scale field is a finite value of magnitude 1e-4..1, random
                   sign, so the expected output has no inf/NaN (plain F16,
                   BF16 and F32 rows also carry zeros, subnormals, inf, NaN)
    f32[n_elems]   expected floats (compare bit for bit)

  quantize_<format>.bin  (QuantizeRow; source: gguf for q8_0, f16, bf16;
                          script for q8_1, q8_k)
    char[4]  magic "ELQQ"
    u32      version = 1
    u32      GGML type id
    u32      n_elems
    u32      n_bytes
    f32[n_elems]   input floats (random normals, plus hand-made blocks with
                   exact .5 ties, an all-zero block, and f16/bf16 edge values)
    u8[n_bytes]    expected encoding (compare byte for byte)
"""

import pathlib
import struct

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

OUT = pathlib.Path(__file__).resolve().parent / "testdata"
RNG = np.random.default_rng(20240611)
VERSION = 1
QK_K = 256

# Byte offsets of the f16 scale fields inside one block (ggml-common.h).
F16_SCALE_OFFSETS = {
    Q.Q4_0: [0],
    Q.Q4_1: [0, 2],
    Q.Q5_0: [0],
    Q.Q5_1: [0, 2],
    Q.Q8_0: [0],
    Q.Q2_K: [80, 82],
    Q.Q3_K: [108],
    Q.Q4_K: [0, 2],
    Q.Q5_K: [0, 2],
    Q.Q6_K: [208],
    Q.IQ4_NL: [0],
    Q.IQ4_XS: [0],
}


def sane_scales(count: int) -> np.ndarray:
    mag = 10.0 ** RNG.uniform(-4.0, 0.0, size=count)
    sign = RNG.choice([-1.0, 1.0], size=count)
    return (mag * sign).astype(np.float32)


def header(magic: bytes, qtype: Q, n_elems: int, n_bytes: int) -> bytes:
    return magic + struct.pack("<IIII", VERSION, int(qtype), n_elems, n_bytes)


def write(name: str, payload: bytes) -> None:
    path = OUT / name
    path.write_bytes(payload)
    print(f"{path.relative_to(OUT.parent.parent.parent.parent)}: {len(payload)} bytes")


def random_blocks(qtype: Q, n_blocks: int) -> np.ndarray:
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    raw = RNG.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    for off in F16_SCALE_OFFSETS.get(qtype, []):
        raw[:, off:off + 2] = sane_scales(n_blocks).astype(np.float16).view(np.uint8).reshape(-1, 2)
    return raw


def q8_k_blocks(n_blocks: int) -> np.ndarray:
    """Q8_K: f32 d, 256 x i8 qs, 16 x i16 bsums (consistent with qs)."""
    d = sane_scales(n_blocks)
    qs = RNG.integers(-127, 128, size=(n_blocks, QK_K), dtype=np.int8)
    bsums = qs.astype(np.int32).reshape(n_blocks, 16, 16).sum(axis=-1).astype(np.int16)
    return np.concatenate([d.reshape(-1, 1).view(np.uint8), qs.view(np.uint8), bsums.view(np.uint8)],
                          axis=1)


def dequantize_q8_k(raw: np.ndarray) -> np.ndarray:
    d = raw[:, :4].copy().view(np.float32)
    qs = raw[:, 4:4 + QK_K].copy().view(np.int8).astype(np.float32)
    return (d * qs).reshape(-1)


def float_specials(qtype: Q) -> np.ndarray:
    if qtype == Q.F16:
        bits = [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
                0x7e00, 0x7c01, 0xfe12, 0x3c00, 0x3555]
        return np.array(bits, dtype=np.uint16).view(np.uint8)
    if qtype == Q.BF16:
        bits = [0x0000, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x3f80, 0x4049]
        return np.array(bits, dtype=np.uint16).view(np.uint8)
    vals = [0.0, -0.0, 1e-45, -1e-40, np.inf, -np.inf, np.nan, 3.4028235e38, 1.0, -2.5]
    return np.array(vals, dtype=np.float32).view(np.uint8)


def make_decode(qtype: Q) -> None:
    name = qtype.name.lower()
    if qtype in (Q.F32, Q.F16, Q.BF16):
        width = 4 if qtype == Q.F32 else 2
        n_random = 512
        if qtype == Q.F32:
            body = RNG.standard_normal(n_random).astype(np.float32).view(np.uint8)
        else:
            body = RNG.integers(0, 65536, size=n_random, dtype=np.uint16).view(np.uint8)
        raw = np.concatenate([body, float_specials(qtype)]).reshape(-1, width)
    elif qtype == Q.Q8_K:
        raw = q8_k_blocks(16)
    else:
        raw = random_blocks(qtype, 16)
    data = np.ascontiguousarray(raw).reshape(-1)
    if qtype == Q.Q8_K:
        expected = dequantize_q8_k(raw)
    else:
        expected = quants.dequantize(data, qtype).astype(np.float32, copy=False).reshape(-1)
    block_elems, _ = GGML_QUANT_SIZES[qtype]
    assert expected.size == raw.shape[0] * block_elems
    write(f"decode_{name}.bin",
          header(b"ELQD", qtype, expected.size, data.size) + data.tobytes() +
          expected.astype("<f4").tobytes())


def quantize_q8_1(x: np.ndarray) -> np.ndarray:
    """ggml quantize_row_q8_1_ref: f16 d, f16 s = f32(sum(q)) * d, 32 x i8."""
    blocks = x.reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    # gguf's np_roundf is C roundf (halves away from zero), exactly.
    q = quants.np_roundf((blocks * inv).astype(np.float32)).astype(np.int8)
    s = (q.astype(np.int32).sum(axis=1, keepdims=True).astype(np.float32) * d).astype(np.float32)
    return np.concatenate([d.astype(np.float16).view(np.uint8), s.astype(np.float16).view(np.uint8),
                           q.view(np.uint8)], axis=1).reshape(-1)


def quantize_q8_k(x: np.ndarray) -> np.ndarray:
    """ggml quantize_row_q8_K_ref: the first value of largest magnitude maps to
    -127; q = nearest_int(iscale * x) (ties to even, which np.rint does in f32);
    d = 1 / iscale; an all-zero block is all zeros (bsums too, our choice)."""
    out = []
    for block in x.reshape(-1, QK_K):
        imax = int(np.argmax(np.abs(block)))  # first occurrence, as ggml's strict '>'
        vmax = block[imax]
        if vmax == 0:
            out.append(np.zeros(4 + QK_K + 32, dtype=np.uint8))
            continue
        iscale = np.float32(-127.0) / vmax
        q = np.minimum(127, np.rint((iscale * block).astype(np.float32))).astype(np.int8)
        bsums = q.astype(np.int32).reshape(16, 16).sum(axis=1).astype(np.int16)
        d = np.array([np.float32(1.0) / iscale], dtype=np.float32)
        out.append(np.concatenate([d.view(np.uint8), q.view(np.uint8), bsums.view(np.uint8)]))
    return np.concatenate(out)


def tie_block(n: int, scale_to: float) -> np.ndarray:
    """A block whose largest magnitude makes d exactly 1.0, so x * (1/d) = x and
    the .5 values are exact rounding ties."""
    b = np.zeros(n, dtype=np.float32)
    b[0] = scale_to
    halves = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 100.5, -100.5, 63.5, -7.5], np.float32)
    b[1:1 + halves.size] = halves
    return b


def make_quantize(qtype: Q) -> None:
    name = qtype.name.lower()
    block_elems, _ = GGML_QUANT_SIZES[qtype]
    if qtype in (Q.Q8_0, Q.Q8_1):
        x = np.concatenate([
            (RNG.standard_normal(14 * 32) * 10.0 ** RNG.uniform(-3, 2, size=14 * 32)),
            tie_block(32, 127.0), np.zeros(32)]).astype(np.float32)
    elif qtype == Q.Q8_K:
        x = np.concatenate([
            RNG.standard_normal(6 * QK_K) * 10.0 ** RNG.uniform(-3, 2, size=6 * QK_K),
            tie_block(QK_K, -127.0), np.zeros(QK_K)]).astype(np.float32)
    else:  # F16 / BF16: random spread of magnitudes, plus exact ties and edges
        x = (RNG.standard_normal(480) * 10.0 ** RNG.uniform(-9, 5, size=480)).astype(np.float32)
        edges = np.array([
            0.0, -0.0, 65504.0, 65519.0, 65520.0, -70000.0, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
            2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14 - 2.0 ** -25, 1e-30, np.inf, -np.inf,
            1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 3.4028235e38, -1e-40, 1.00390625, 5.96e-8, 6.1e-5,
            -6.1e-5, 123.456, 0.1, -0.2, 0.3, 1e-3, 4e4, 2e-7, 7.0, -7.5], dtype=np.float32)
        x = np.concatenate([x, edges])
    assert x.size % block_elems == 0
    if qtype == Q.Q8_1:
        expected = quantize_q8_1(x)
    elif qtype == Q.Q8_K:
        expected = quantize_q8_k(x)
    else:
        with np.errstate(over="ignore"):  # f16 overflow to inf is part of the test
            expected = np.ascontiguousarray(quants.quantize(x, qtype)).view(np.uint8).reshape(-1)
    write(f"quantize_{name}.bin",
          header(b"ELQQ", qtype, x.size, expected.size) + x.astype("<f4").tobytes() +
          expected.tobytes())


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for qtype in (Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q2_K, Q.Q3_K,
                  Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q8_K):
        make_decode(qtype)
    for qtype in (Q.Q8_0, Q.Q8_1, Q.Q8_K, Q.F16, Q.BF16):
        make_quantize(qtype)
    # Added later, after the others so that their files keep their bytes
    # (one random stream for all).
    for qtype in (Q.IQ4_NL, Q.IQ4_XS):
        make_decode(qtype)


if __name__ == "__main__":
    main()
