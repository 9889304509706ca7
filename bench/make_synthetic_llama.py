#!/usr/bin/env python3
"""Writes a synthetic Llama GGUF with the exact shapes and Q4_K_M type mix of
Llama 3.2 1B or Llama 3.1 8B (or Qwen 2.5 7B's layer shape, below), for speed
benchmarks (speed does not depend on the weight values). Run with the
reference venv, which has the `gguf` package:

    py=$(scripts/reference/setup --print-python)
    $py bench/make_synthetic_llama.py --shape 1b    # ~/.cache/ellm/synthetic/llama-3.2-1b-synthetic-q4_k_m.gguf
    $py bench/make_synthetic_llama.py --shape 8b    # ~/.cache/ellm/synthetic/llama-3.1-8b-synthetic-q4_k_m.gguf
    $py bench/make_synthetic_llama.py --shape qwen2.5-7b-4l   # .../qwen2.5-7b-4l-synthetic-q4_k_m.gguf

qwen2.5-7b-4l: 4 of Qwen 2.5 7B's 28 layers (config.json of Qwen/Qwen2.5-7B):
architecture qwen2 (biases on Q, K and V: F32 zeros), n_embd 3584, 28 heads,
4 KV heads, head_dim 128, n_ff 18944, untied output, RoPE base 1e6 (NEOX,
no rope_freqs), RMS eps 1e-6, the 152064-row embedding, the tokenizer of
llama.cpp's ggml-vocab-qwen2.gguf (151936 tokens) padded with [PAD<i>]
tokens to 152064 as convert_hf_to_gguf.py pads it. Qwen 2.5 is trained at
32768; for 64K it runs with the YaRN scaling Qwen's model card gives for
long texts (rope_scaling {"type": "yarn", "factor": 4,
"original_max_position_embeddings": 32768}), written as
qwen2.rope.scaling.{type,factor,original_context_length} with
context_length 131072 (32768 x 4), so that both engines accept 64K.

Weights are structurally valid Q4_K / Q6_K blocks with random quants, random
sub-block scales and a small fixed super-block scale (|w| < 0.1), seeded, so
no NaN or Inf can appear; the text such a model writes is noise. Norms are
F32 ones. The tokenizer (every tokenizer.* key) is copied from llama.cpp's
ggml-vocab-llama-bpe.gguf (Llama 3's 128256-token vocabulary).

Tensor types follow llama.cpp's Q4_K_M rules (src/llama-quant.cpp,
llama_tensor_get_type_impl, as vendored in llama-cpp-python 0.3.36):
  output.weight, and token_embd.weight when tied (no output.weight): Q6_K
  token_embd.weight when untied: Q4_K (no Q4_K_M rule raises it)
  attn_v and ffn_down: Q6_K where use_more_bits(i, n) — the first n/8 layers,
    the last n/8, and every third in between ((i - n/8) % 3 == 2) — else Q4_K
  everything else: Q4_K
Tensors are written one at a time, so memory stays near the largest tensor
(output.weight of the 8B: 431 MB).
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import gguf

LLAMA = dict(arch="llama", n_vocab=128256, vocab="ggml-vocab-llama-bpe.gguf", rope_base=500000.0,
             context=131072, rms_eps=1e-5, biases=False)
SHAPES = {
    # Llama 3.2 1B: config.json of meta-llama/Llama-3.2-1B; rope_scaling factor 32.
    "1b": dict(LLAMA, name="Llama 3.2 1B synthetic", label="llama-3.2-1b", n_embd=2048,
               n_layer=16, n_head=32, n_head_kv=8, head_dim=64, n_ff=8192, tied=True,
               rope_factor=32.0),
    # Llama 3.1 8B: config.json of meta-llama/Llama-3.1-8B; rope_scaling factor 8.
    "8b": dict(LLAMA, name="Llama 3.1 8B synthetic", label="llama-3.1-8b", n_embd=4096,
               n_layer=32, n_head=32, n_head_kv=8, head_dim=128, n_ff=14336, tied=False,
               rope_factor=8.0),
    # Qwen 2.5 7B, 4 layers: see the module docstring.
    "qwen2.5-7b-4l": dict(arch="qwen2", n_vocab=152064, vocab="ggml-vocab-qwen2.gguf",
                          rope_base=1000000.0, context=131072, rms_eps=1e-6, biases=True,
                          name="Qwen 2.5 7B 4-layer synthetic", label="qwen2.5-7b-4l",
                          n_embd=3584, n_layer=4, n_head=28, n_head_kv=4, head_dim=128,
                          n_ff=18944, tied=False, rope_factor=None,
                          yarn=dict(factor=4.0, original_context=32768)),
}
QK_K = 256
Q4_K, Q6_K, F32 = (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K,
                   gguf.GGMLQuantizationType.F32)
BLOCK_BYTES = {Q4_K: 144, Q6_K: 210}
FTYPE_MOSTLY_Q4_K_M = 15  # llama_ftype


def llama31_rope_factors(head_dim, factor, rope_base):
    """rope_freqs.weight as convert_hf_to_gguf.py writes it for rope_type llama3
    (low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192)."""
    low, high, old_ctx = 1.0, 4.0, 8192
    out = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / (rope_base ** (i / head_dim))
        wavelen = 2 * math.pi / freq
        if wavelen < old_ctx / high:
            out.append(1.0)
        elif wavelen > old_ctx / low:
            out.append(factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def quant_blocks(rng, qtype, rows, cols):
    """rows x cols weights as raw blocks, [rows, cols/256 * block bytes] uint8."""
    assert cols % QK_K == 0
    nb = rows * (cols // QK_K)
    size = BLOCK_BYTES[qtype]
    b = np.frombuffer(rng.bytes(nb * size), dtype=np.uint8).reshape(nb, size).copy()
    if qtype == Q4_K:
        # d, dmin (f16), scales[12] (6-bit scales and mins: any bits are valid), qs[128].
        # w = d*sc*q - dmin*m with sc, m < 64, q < 16: |w| <= 64*15*1e-4 < 0.1;
        # dmin = 7.5 d centres the mean of the random values near zero.
        b[:, 0:2] = np.frombuffer(np.float16(1e-4).tobytes(), dtype=np.uint8)
        b[:, 2:4] = np.frombuffer(np.float16(7.5e-4).tobytes(), dtype=np.uint8)
    else:
        # ql[128], qh[64], scales[16] (int8), d (f16). w = d*sc*(q-32): |w| <= 2e-5*128*32 < 0.1.
        b[:, 208:210] = np.frombuffer(np.float16(2e-5).tobytes(), dtype=np.uint8)
    return b.reshape(rows, -1)


def copy_tokenizer(writer, vocab_path, n_vocab):
    """Copies every tokenizer.* key; a shorter token list is padded to n_vocab
    with [PAD<i>] tokens of type UNUSED (convert_hf_to_gguf.py's padding)."""
    reader = gguf.GGUFReader(vocab_path)
    n = 0
    n_tokens = len(reader.fields["tokenizer.ggml.tokens"].data)
    pad = max(0, n_vocab - n_tokens)
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = gguf.GGUFValueType(field.types[0])
        sub = gguf.GGUFValueType(field.types[1]) if vtype == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if key == "tokenizer.ggml.tokens" and pad:
            value = value + [f"[PAD{i}]" for i in range(n_tokens, n_vocab)]
        elif key == "tokenizer.ggml.token_type" and pad:
            value = value + [int(gguf.TokenType.UNUSED)] * pad
        elif key == "tokenizer.ggml.scores" and pad:
            value = value + [0.0] * pad
        writer.add_key_value(key, value, vtype, sub_type=sub)
        n += 1
    if n == 0:
        sys.exit(f"no tokenizer.* keys in {vocab_path}")


def tensor_plan(s):
    """[(name, numpy-order shape (rows, cols), type)] in file order."""
    e, f, L = s["n_embd"], s["n_ff"], s["n_layer"]
    q, kv = s["n_head"] * s["head_dim"], s["n_head_kv"] * s["head_dim"]
    plan = [("token_embd.weight", (s["n_vocab"], e), Q6_K if s["tied"] else Q4_K)]
    if s["rope_factor"]:
        plan.append(("rope_freqs.weight", (s["head_dim"] // 2,), F32))
    for i in range(L):
        more = use_more_bits(i, L)
        plan += [(f"blk.{i}.attn_norm.weight", (e,), F32),
                 (f"blk.{i}.attn_q.weight", (q, e), Q4_K),
                 (f"blk.{i}.attn_k.weight", (kv, e), Q4_K),
                 (f"blk.{i}.attn_v.weight", (kv, e), Q6_K if more else Q4_K)]
        if s["biases"]:
            plan += [(f"blk.{i}.attn_q.bias", (q,), F32),
                     (f"blk.{i}.attn_k.bias", (kv,), F32),
                     (f"blk.{i}.attn_v.bias", (kv,), F32)]
        plan += [(f"blk.{i}.attn_output.weight", (e, q), Q4_K),
                 (f"blk.{i}.ffn_norm.weight", (e,), F32),
                 (f"blk.{i}.ffn_gate.weight", (f, e), Q4_K),
                 (f"blk.{i}.ffn_up.weight", (f, e), Q4_K),
                 (f"blk.{i}.ffn_down.weight", (e, f), Q6_K if more else Q4_K)]
    plan.append(("output_norm.weight", (e,), F32))
    if not s["tied"]:
        plan.append(("output.weight", (s["n_vocab"], e), Q6_K))
    return plan


def nbytes(shape, qtype):
    if qtype == F32:
        return 4 * int(np.prod(shape))
    return shape[0] * (shape[1] // QK_K) * BLOCK_BYTES[qtype]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    cache = os.environ.get("ELLM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ellm")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--out", help="default: $ELLM_CACHE/synthetic/<name>.gguf")
    ap.add_argument("--vocab", help="the GGUF file the tokenizer is copied from (default: "
                    "llama.cpp's vocabulary of the shape's family, from the source "
                    "scripts/reference/llama-source unpacks)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    s = SHAPES[args.shape]
    if not args.vocab:
        src = subprocess.check_output([os.path.join(here, "..", "scripts", "reference",
                                                    "llama-source")], text=True).strip()
        args.vocab = os.path.join(src, "models", s["vocab"])
    out = args.out or os.path.join(cache, "synthetic", f"{s['label']}-synthetic-q4_k_m.gguf")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)

    w = gguf.GGUFWriter(out + ".tmp", s["arch"])
    w.add_name(s["name"])
    w.add_block_count(s["n_layer"])
    w.add_context_length(s["context"])
    w.add_embedding_length(s["n_embd"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_freq_base(s["rope_base"])
    w.add_rope_dimension_count(s["head_dim"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    if s.get("yarn"):
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(s["yarn"]["factor"])
        w.add_rope_scaling_orig_ctx_len(s["yarn"]["original_context"])
    w.add_vocab_size(s["n_vocab"])
    w.add_file_type(FTYPE_MOSTLY_Q4_K_M)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    copy_tokenizer(w, args.vocab, s["n_vocab"])

    plan = tensor_plan(s)
    for name, shape, qtype in plan:
        # tensor_dtype float32 + raw_dtype: the shape is taken as elements, not bytes.
        w.add_tensor_info(name, shape, np.dtype(np.float32), nbytes(shape, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()

    rng = np.random.default_rng(args.seed)
    rope = (llama31_rope_factors(s["head_dim"], s["rope_factor"], s["rope_base"])
            if s["rope_factor"] else None)
    total = 0
    for name, shape, qtype in plan:
        if name == "rope_freqs.weight":
            data = rope
        elif name.endswith(".bias"):
            data = np.zeros(shape, dtype=np.float32)
        elif qtype == F32:
            data = np.ones(shape, dtype=np.float32)
        else:
            data = quant_blocks(rng, qtype, *shape)
        w.write_tensor_data(data)
        total += data.nbytes
        del data
    w.close()
    os.replace(out + ".tmp", out)
    counts = {}
    for _, _, t in plan:
        counts[t.name] = counts.get(t.name, 0) + 1
    print(f"{out}: {len(plan)} tensors {counts}, {total / 1e9:.2f} GB of tensor data")


if __name__ == "__main__":
    main()
