#!/usr/bin/env python3
"""Writes the seed corpus for the GGUF parser fuzzer (tests/fuzz/gguf_fuzz.cc)
and the corpus test (tests/engine/gguf_corpus_test.cc) into this directory.

Seeds are small valid GGUF files (every metadata value type, nested arrays,
several tensors of several types, custom alignment, versions 2 and 3) and
near-valid ones, each broken in one way, so the fuzzer starts next to every
error path. File names start with "seed-"; files the fuzzer adds (scripts/fuzz
merges them in) are named by content hash and kept.

Usage: tests/engine/gguf_corpus/make_seeds.py [out_dir]   (default: beside this script)
"""
import os
import struct
import sys

# GGUF metadata value types (engine/include/ellm/engine/gguf.h).
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
              F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
# GGML tensor types: id -> (block elements, block bytes) (engine/quant/tensor_type.cc).
T_F32, T_F16, T_Q4_0, T_Q8_0, T_Q4_K, T_Q6_K, T_I8, T_BF16 = 0, 1, 2, 8, 12, 14, 24, 30
BLOCKS = {T_F32: (1, 4), T_F16: (1, 2), T_Q4_0: (32, 18), T_Q8_0: (32, 34),
          T_Q4_K: (256, 144), T_Q6_K: (256, 210), T_I8: (1, 1), T_BF16: (1, 2)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(vtype, v):
    """Encodes a value of `vtype`. Arrays are (elem_type, [elements])."""
    if vtype == STR:
        return gstr(v)
    if vtype == ARR:
        et, elems = v
        return struct.pack("<IQ", et, len(elems)) + b"".join(value(et, e) for e in elems)
    return struct.pack(SCALAR_FMT.get(vtype, "<I"), v)  # unknown types: 4 bytes


def tensor_bytes(ne, ttype):
    """Bytes of data written for a tensor; capped, as hostile shapes never get that far."""
    be, bb = BLOCKS.get(ttype, (1, 4))
    n = 1
    for d in ne:
        n *= d
    return min(n // be * bb, 1 << 10)


def gguf(kvs, tensors, version=3, alignment=32, n_kv=None, n_tensors=None):
    """kvs: [(key, type, value)]; tensors: [(name, ne, type)] or with a 4th
    item overriding the data offset. Data bytes are a counting pattern."""
    out = b"GGUF" + struct.pack("<I", version)
    out += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors,
                       len(kvs) if n_kv is None else n_kv)
    for key, vtype, v in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + value(vtype, v)
    offset, datas = 0, []
    for t in tensors:
        name, ne, ttype = t[:3]
        size = tensor_bytes(ne, ttype)
        off = t[3] if len(t) > 3 else offset
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", ttype, off)
        datas.append((offset, size))
        offset += (size + alignment - 1) // alignment * alignment
    pad = (-len(out)) % alignment
    out += b"\0" * pad
    data = bytearray(offset)
    for off, size in datas:
        for i in range(size):
            data[off + i] = (off + i) & 0xFF
    return out + bytes(data)


def every_type_kvs():
    return [
        ("general.architecture", STR, "gemma3"),
        ("t.u8", U8, 200), ("t.i8", I8, -100), ("t.u16", U16, 60000), ("t.i16", I16, -30000),
        ("t.u32", U32, 4000000000), ("t.i32", I32, -2000000000), ("t.f32", F32, 1.5),
        ("t.bool", BOOL, 1), ("t.str", STR, "hello\nworld\""), ("t.u64", U64, 2**63 + 5),
        ("t.i64", I64, -(2**62)), ("t.f64", F64, -2.25), ("t.empty_str", STR, ""),
    ]


def array_kvs():
    kvs = []
    for et, elems in [(U8, [1, 2, 255]), (I8, [-1, 0, 1]), (U16, [1, 65535]), (I16, [-5, 5]),
                      (U32, [7, 8, 9]), (I32, [-7, 3]), (F32, [0.5, -1.0]), (BOOL, [0, 1, 1]),
                      (U64, [1, 2**64 - 1]), (I64, [-1]), (F64, [3.25]),
                      (STR, ["<pad>", "<eos>", "", "a b"])]:
        kvs.append(("arr.%d" % et, ARR, (et, elems)))
    kvs.append(("arr.empty", ARR, (U32, [])))
    kvs.append(("arr.nested", ARR, (ARR, [(I32, [1, 2]), (STR, ["x"]), (ARR, [(U8, [9])])])))
    return kvs


def tensors():
    return [
        ("a.weight", [8, 4], T_F32), ("b.weight", [32, 2], T_Q8_0), ("c.weight", [16], T_F16),
        ("d.weight", [256, 1, 2], T_Q4_K), ("e.weight", [64], T_Q4_0),
        ("f.weight", [3, 2, 2, 1], T_BF16),
        ("g.weight", [5], T_I8), ("h.weight", [256], T_Q6_K),
    ]


def seeds():
    s = {}
    s["valid-v3-every-type"] = gguf(every_type_kvs(), tensors()[:2])
    s["valid-v2-every-type"] = gguf(every_type_kvs(), tensors()[:2], version=2)
    s["valid-arrays"] = gguf(array_kvs(), [("a.weight", [4], T_F32)])
    s["valid-many-tensors"] = gguf([("general.architecture", STR, "llama")], tensors())
    s["valid-align-64"] = gguf([("general.alignment", U32, 64)], tensors()[:4], alignment=64)
    s["valid-align-1"] = gguf([("general.alignment", U32, 1)], tensors()[:3], alignment=1)
    s["valid-align-8-v2"] = gguf([("general.alignment", U32, 8)], tensors()[2:5], version=2,
                                 alignment=8)
    s["valid-no-tensors"] = gguf(every_type_kvs()[:3], [])
    s["valid-empty"] = gguf([], [])
    s["valid-deep-nesting"] = gguf(
        [("deep", ARR, (ARR, [(ARR, [(ARR, [(ARR, [(ARR, [(ARR, [(U8, [1])])])])])])]))], [])
    s["valid-shared-offset"] = gguf([], [("a", [8], T_F32, 0), ("b", [4], T_F32, 0)])

    v = gguf([("general.architecture", STR, "gemma3")], tensors()[:2])
    s["bad-magic"] = b"GGUX" + v[4:]
    s["bad-version-1"] = v[:4] + struct.pack("<I", 1) + v[8:]
    s["bad-big-endian"] = v[:4] + struct.pack(">I", 3) + v[8:]
    s["bad-truncated-header"] = v[:20]
    s["bad-truncated-data"] = v[:-10]
    s["bad-kv-count"] = gguf([("k", U32, 1)], [], n_kv=2**40)
    s["bad-tensor-count"] = gguf([("k", U32, 1)], [("a", [4], T_F32)], n_tensors=3)
    s["bad-unknown-value-type"] = gguf([("k", 13, 0)], [])
    s["bad-bool"] = gguf([("k", BOOL, 2)], [])
    s["bad-bool-array"] = gguf([("k", ARR, (BOOL, [0, 1, 7]))], [])
    s["bad-array-count"] = gguf([("k", ARR, (STR, ["a"]))], []).replace(
        struct.pack("<IQ", STR, 1), struct.pack("<IQ", STR, 2**62), 1)
    s["bad-array-too-deep"] = gguf(
        [("k", ARR, (ARR, [(ARR, [(ARR, [(ARR, [(ARR, [(ARR, [(ARR, [(ARR, [(ARR, [
            (U8, [1])])])])])])])])])]))], [])
    s["bad-duplicate-key"] = gguf([("k", U32, 1), ("k", U32, 2)], [])
    s["bad-empty-key"] = gguf([("", U32, 1)], [])
    s["bad-alignment-type"] = gguf([("general.alignment", U64, 32)], [])
    s["bad-alignment-not-pow2"] = gguf([("general.alignment", U32, 48)], [("a", [4], T_F32)])
    s["bad-alignment-zero"] = gguf([("general.alignment", U32, 0)], [])
    s["bad-duplicate-tensor"] = gguf([], [("a", [4], T_F32), ("a", [4], T_F32)])
    s["bad-tensor-dims-0"] = gguf([], [("a", [], T_F32)])
    s["bad-tensor-dims-5"] = gguf([], [("a", [1, 1, 1, 1, 1], T_F32)])
    s["bad-tensor-ne-0"] = gguf([], [("a", [0, 4], T_F32)])
    s["bad-tensor-type"] = gguf([], [("a", [4], 4)])
    s["bad-tensor-block"] = gguf([], [("a", [33], T_Q8_0)])
    s["bad-tensor-overflow"] = gguf([], [("a", [2**40, 2**40], T_F32)])
    s["bad-tensor-offset-unaligned"] = gguf([], [("a", [4], T_F32, 4)])
    s["bad-tensor-offset-past-end"] = gguf([], [("a", [4], T_F32, 2**63)])
    s["bad-string-length"] = gguf([("k", STR, "abc")], []).replace(
        struct.pack("<Q", 3) + b"abc", struct.pack("<Q", 2**63) + b"abc", 1)
    return s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, data in seeds().items():
        with open(os.path.join(out, "seed-" + name + ".gguf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
