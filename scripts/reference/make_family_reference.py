#!/usr/bin/env python3
"""Makes the golden files in tests/reference/families/ with llama.cpp: one
small random-weight model per family (Llama 3, Qwen 2, Qwen 2 with YaRN)
with the family's exact tensor layout and its real vocabulary, and what
llama.cpp computes with it.

The models are not committed (the vocabularies alone make them 5-20 MB).
Instead each golden file carries the model's *recipe*: its metadata, and for
every tensor a name, shape, type and the seed of a counter-based generator
(splitmix64) whose output bytes are the tensor's data, as spelled out below.
tests/engine/model/family_golden_test.cc rebuilds the same file from the
recipe (and the vocabulary in the shared test data), checks every tensor's
checksum against the one recorded here, and compares its outputs.

  py=$(scripts/reference/setup --print-python)
  $py scripts/reference/make_family_reference.py reference     # all families
  $py scripts/reference/make_family_reference.py models --out DIR  # GGUFs only

The vocabularies are read from $ELLM_SHARED_DIR/testdata/tokenizers (default:
the `shared/` folder beside the repository). `models` needs only the `gguf`
package; `reference` needs llama-cpp-python (pinned by scripts/reference/setup).

The generator (must match tests/engine/model/family_model_builder.cc):
  word(seed, i) = splitmix64 of seed + (i + 1) * 0x9E3779B97F4A7C15, i >= 0
  F32/F16 tensors: element i = offset + (k - 1024) * amp / 1024 with
    k = word(seed, i) >> 53; amp a power of two, so every value is exact in
    f16 when offset is 0.
  Quantized tensors: byte j = byte (j % 8) of word(seed, j // 8), little-
    endian; then in every block the f16 scale fields are overwritten with the
    recipe's bit patterns (Q8_0, Q4_0, Q5_0: d at byte 0; Q4_K: d and dmin;
    Q6_K: d at byte 208, after its quants and int8 sub-scales) and Q8_0's int8
    quants are mapped to (b % 255) - 127, so that none is -128.
  checksum = sum over bytes j of (b_j + 1) * word(0, j), modulo 2^64.

llama.cpp runs with: CPU, KV cache F16, flash attention off, n_ctx 1024,
n_batch = n_ubatch = 512, 2 threads; prompts are token ids, so that nothing
here depends on a tokenizer.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "reference", "families")
SHARED = os.environ.get("ELLM_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
VOCABS = os.path.join(SHARED, "testdata", "tokenizers")
N_THREADS = 2
N_CTX = 1024
LLAMA_CPP_COMMIT = "ggml-org/llama.cpp@0c1e57098"  # as in make_gemma3_reference.py

GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1

# ggml block sizes: (elements, bytes) per block.
BLOCKS = {"q8_0": (32, 34), "q4_0": (32, 18), "q5_0": (32, 22), "q4_k": (256, 144),
          "q6_k": (256, 210)}
TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q5_0": 6, "q8_0": 8, "q4_k": 12, "q6_k": 14}
# Where each quantized block keeps its f16 scale d (Q6_K: after its quants).
D_AT = {"q8_0": 0, "q4_0": 0, "q5_0": 0, "q4_k": 0, "q6_k": 208}

PROMPT_LENGTHS = [1, 9, 40, 300]
# Positions of the 300-token prompt whose logits are stored (its micro-batch
# boundaries at 256 included); shorter prompts store every position.
LONG_POSITIONS = [0, 127, 255, 256, 299]
TOP_K = 8
LAST_TOP_K = 32
GREEDY_FROM = [9, 40]  # prompt lengths greedily continued
GREEDY_STEPS = 16


def log(*args):
    print("make_family_reference:", *args, file=sys.stderr, flush=True)


def f16_bits(x):
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


# Words per chunk of words() / checksum(): a few numpy temporaries of 8 bytes
# per element each, so the largest tensors (a 1.2 GB Gemma 3 27B output) stay
# within a few hundred MB instead of ~30 GB.
CHUNK = 1 << 24


def words(seed, n, start=0):
    """Words start+1 .. start+n of the splitmix64 stream from seed."""
    with np.errstate(over="ignore"):
        i = np.arange(start + 1, start + n + 1, dtype=np.uint64)
        z = np.uint64(seed) + i * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def checksum(data):
    """sum over bytes of (byte + 1) * words(0)[i], mod 2^64 (in chunks)."""
    total = 0
    for at in range(0, len(data), CHUNK):
        b = np.frombuffer(data, dtype=np.uint8, offset=at,
                          count=min(CHUNK, len(data) - at)).astype(np.uint64) + np.uint64(1)
        with np.errstate(over="ignore"):
            total = (total + int(np.sum(b * words(0, len(b), at), dtype=np.uint64))) & MASK
    return total


def tensor_bytes(t):
    """The tensor's data as bytes (row-major, ne[0] contiguous)."""
    n = int(np.prod(t["ne"]))
    if t["type"] in ("f32", "f16"):
        k = (words(t["seed"], n) >> np.uint64(53)).astype(np.int64) - 1024
        v = t["offset"] + k.astype(np.float64) * (t["amp"] / 1024.0)
        return v.astype(np.float32 if t["type"] == "f32" else np.float16).tobytes()
    per, size = BLOCKS[t["type"]]
    assert t["ne"][0] % per == 0, t
    nblocks = n // per
    nbytes = nblocks * size
    n_words = (nbytes + 7) // 8
    stream = np.empty(n_words, dtype=np.uint64)
    for at in range(0, n_words, CHUNK):
        stream[at:at + CHUNK] = words(t["seed"], min(CHUNK, n_words - at), at)
    raw = stream.view(np.uint8)[:nbytes]
    blk = raw.reshape(nblocks, size)
    if t["type"] == "q8_0":
        q = (blk[:, 2:].astype(np.int16) % 255) - 127
        blk[:, 2:] = q.astype(np.int8).view(np.uint8)
    at = D_AT[t["type"]]
    blk[:, at:at + 2] = np.array([t["d"]], dtype=np.uint16).view(np.uint8)
    if t["type"] == "q4_k":
        blk[:, 2:4] = np.array([t["dmin"]], dtype=np.uint16).view(np.uint8)
    return blk.tobytes()


# ---------------------------------------------------------------- recipes --

def _tensor(family, name, ne, ttype, offset=0.0, amp=0.0, scale=0.0):
    """A tensor of the recipe. Floats: offset + U[-amp, amp); quantized:
    `scale` sets d (and dmin) so that weights are roughly U[-scale, scale]."""
    t = {"name": name, "ne": ne, "type": ttype, "seed": fnv1a64(family + "/" + name)}
    if ttype in ("f32", "f16"):
        t.update(offset=offset, amp=amp)
    elif ttype == "q8_0":
        t.update(d=f16_bits(scale / 127))
    elif ttype == "q4_0":
        t.update(d=f16_bits(scale / 8))
    elif ttype == "q5_0":
        t.update(d=f16_bits(scale / 16))
    elif ttype == "q6_k":
        # d * sc * (q - 32) with sc in [-128, 127], q in [0, 63]
        t.update(d=f16_bits(scale / (128 * 32)))
    elif ttype == "q4_k":
        # d * sc * q - dmin * m with sc, m in [0, 63], q in [0, 15]
        t.update(d=f16_bits(2 * scale / (63 * 15)), dmin=f16_bits(scale / 63))
    return t


def recipe(family, arch, vocab, n_vocab, n_ctx, meta, types, untied, rope_freqs, biases,
           head_dim=None, n_rot=None, qk_norm=False, fused=False, longrope=False):
    """meta: extra (key suffix, kind, value); types: role -> tensor type.
    head_dim: attention.key_length / value_length when not n_embd / n_head;
    n_rot: rope.dimension_count when not head_dim (partial RoPE);
    qk_norm: attn_q_norm / attn_k_norm per layer (Qwen 3); fused: Phi 3's
    attn_qkv (Q, K, V rows stacked) and ffn_up holding gate then up, no
    ffn_gate; longrope: rope_factors_short / rope_factors_long (Phi 3)."""
    E, F, H, HKV, L = 64, 256, 4, 2, 2
    D = head_dim or E // H
    R = n_rot or D
    metadata = [["general.architecture", "str", arch],
                ["general.name", "str", "ellm-test-" + family]]
    base = [("context_length", "u32", n_ctx), ("embedding_length", "u32", E),
            ("block_count", "u32", L), ("feed_forward_length", "u32", F),
            ("attention.head_count", "u32", H), ("attention.head_count_kv", "u32", HKV),
            ("rope.dimension_count", "u32", R)]
    if head_dim:
        base += [("attention.key_length", "u32", D), ("attention.value_length", "u32", D)]
    for k, kind, v in base + meta:
        metadata.append([arch + "." + k, kind, v])
    w = lambda n_in: 1.0 / np.sqrt(n_in)  # noqa: E731
    T = lambda *a, **k: _tensor(family, *a, **k)  # noqa: E731
    tensors = [T("token_embd.weight", [E, n_vocab], types["embd"], scale=1.0),
               T("output_norm.weight", [E], "f32", offset=1.0, amp=0.25)]
    if untied:
        tensors.append(T("output.weight", [E, n_vocab], types["output"], scale=4 * w(E)))
    if rope_freqs:
        # Llama 3.1's factors lie in [1, 8]; these in [1, 3).
        tensors.append(T("rope_freqs.weight", [D // 2], "f32", offset=2.0, amp=1.0))
    if longrope:
        # Phi-3.5's short factors lie in [1, 3], its long ones in [1, 60].
        tensors += [T("rope_factors_short.weight", [R // 2], "f32", offset=2.0, amp=1.0),
                    T("rope_factors_long.weight", [R // 2], "f32", offset=16.0, amp=8.0)]
    for il in range(L):
        p = "blk.%d." % il
        tensors.append(T(p + "attn_norm.weight", [E], "f32", offset=1.0, amp=0.25))
        if fused:
            tensors.append(T(p + "attn_qkv.weight", [E, (H + 2 * HKV) * D], types["q"], amp=0.25,
                             scale=2 * w(E)))
        else:
            tensors += [
                T(p + "attn_q.weight", [E, H * D], types["q"], amp=0.25, scale=2 * w(E)),
                T(p + "attn_k.weight", [E, HKV * D], types["k"], amp=0.25, scale=2 * w(E)),
                T(p + "attn_v.weight", [E, HKV * D], types["v"], amp=0.25, scale=w(E)),
            ]
        if biases:
            tensors += [T(p + "attn_q.bias", [H * D], "f32", amp=0.5),
                        T(p + "attn_k.bias", [HKV * D], "f32", amp=0.5),
                        T(p + "attn_v.bias", [HKV * D], "f32", amp=0.125)]
        if qk_norm:
            tensors += [T(p + "attn_q_norm.weight", [D], "f32", offset=1.0, amp=0.25),
                        T(p + "attn_k_norm.weight", [D], "f32", offset=1.0, amp=0.25)]
        tensors += [
            T(p + "attn_output.weight", [H * D, E], types["o"], amp=0.125, scale=w(E)),
            T(p + "ffn_norm.weight", [E], "f32", offset=1.0, amp=0.25),
        ]
        if fused:
            tensors.append(T(p + "ffn_up.weight", [E, 2 * F], types["up"], amp=0.25,
                             scale=2 * w(E)))
        else:
            tensors += [
                T(p + "ffn_gate.weight", [E, F], types["gate"], amp=0.25, scale=2 * w(E)),
                T(p + "ffn_up.weight", [E, F], types["up"], amp=0.25, scale=w(E)),
            ]
        tensors.append(T(p + "ffn_down.weight", [F, E], types["down"], amp=0.0625, scale=w(F)))
    for t in tensors:
        if t["type"] in ("f32", "f16"):
            assert t["amp"] == 0 or 2 ** round(np.log2(t["amp"])) == t["amp"], t
    return {"family": family, "architecture": arch, "vocab": vocab, "metadata": metadata,
            "tensors": tensors}


def recipes():
    llama = recipe(
        "llama", "llama", "ggml-vocab-llama-bpe.gguf", 128256, 131072,
        [("attention.layer_norm_rms_epsilon", "f32", 1e-5), ("rope.freq_base", "f32", 500000.0),
         ("vocab_size", "u32", 128256)],
        {"embd": "q8_0", "q": "f16", "k": "q8_0", "v": "q4_0", "o": "f16", "gate": "q8_0",
         "up": "q4_0", "down": "q4_k"},
        untied=False, rope_freqs=True, biases=False)
    qwen_types = {"embd": "q4_0", "output": "q8_0", "q": "q8_0", "k": "f16", "v": "q8_0",
                  "o": "q4_0", "gate": "f16", "up": "q8_0", "down": "q4_k"}
    qwen_meta = [("attention.layer_norm_rms_epsilon", "f32", 1e-6),
                 ("rope.freq_base", "f32", 1000000.0)]
    qwen2 = recipe("qwen2", "qwen2", "ggml-vocab-qwen2.gguf", 151936, 32768,
                   qwen_meta, qwen_types, untied=True, rope_freqs=False, biases=True)
    yarn = recipe("qwen2-yarn", "qwen2", "ggml-vocab-qwen2.gguf", 151936, 131072,
                  qwen_meta + [("rope.scaling.type", "str", "yarn"),
                               ("rope.scaling.factor", "f32", 4.0),
                               ("rope.scaling.original_context_length", "u32", 32768)],
                  qwen_types, untied=True, rope_freqs=False, biases=True)
    # Qwen 3 (its own vocabulary is Qwen 2's): no biases, per-head Q/K norms,
    # heads of 32 over n_embd 64 / 4 heads (Qwen3-0.6B: 128 over 1024 / 16).
    qwen3 = recipe("qwen3", "qwen3", "ggml-vocab-qwen2.gguf", 151936, 40960,
                   qwen_meta, dict(qwen_types, embd="q8_0"), untied=False, rope_freqs=False,
                   biases=False, head_dim=32, qk_norm=True)
    # Granite 3.x: Llama's block with the file's four multipliers (Granite
    # 3.1 2B's values but for attention.scale, 1 / head_dim as there); its
    # GPT-2-style BPE vocabulary stood in for by GPT-2's own.
    granite = recipe(
        "granite", "granite", "ggml-vocab-gpt-2.gguf", 50257, 131072,
        [("attention.layer_norm_rms_epsilon", "f32", 1e-5),
         ("rope.freq_base", "f32", 10000000.0), ("embedding_scale", "f32", 12.0),
         ("residual_scale", "f32", 0.22), ("attention.scale", "f32", 0.0625),
         ("logit_scale", "f32", 8.0), ("vocab_size", "u32", 50257)],
        {"embd": "q8_0", "output": "q8_0", "q": "q8_0", "k": "f16", "v": "q4_0", "o": "q8_0",
         "gate": "q4_0", "up": "f16", "down": "q4_k"},
        untied=False, rope_freqs=False, biases=False)
    # Mistral Nemo: a llama file whose heads (attention.key_length 128 over
    # n_embd 5120 / 32 heads) are not n_embd / n_head; here 32 over 64 / 4.
    # Tekken's vocabulary stood in for by Llama 3's BPE.
    nemo = recipe(
        "mistral-nemo", "llama", "ggml-vocab-llama-bpe.gguf", 128256, 1024000,
        [("attention.layer_norm_rms_epsilon", "f32", 1e-5), ("rope.freq_base", "f32", 1000000.0),
         ("vocab_size", "u32", 128256)],
        {"embd": "q8_0", "output": "q8_0", "q": "q8_0", "k": "q4_0", "v": "f16", "o": "q8_0",
         "gate": "q8_0", "up": "q4_0", "down": "q4_k"},
        untied=True, rope_freqs=False, biases=False, head_dim=32)
    # Phi 3: fused QKV and gate+up, LongRoPE factors and attn_factor as
    # convert_hf_to_gguf.py writes them for a 128K model (scale 32), partial
    # RoPE (12 of 16 dimensions, Phi-4-mini's 3/4); its gpt-4o-style
    # vocabulary stood in for by Llama 3's BPE. The output is untied, as
    # Phi-3.5-mini's: tied, the random embeddings give logits of ~25 whose
    # rounding noise alone reaches the tolerance (0.22, full RoPE 0.20).
    # phi4-mini runs (n_ctx 1024) under the original context (4096): short
    # factors; phi4-mini-long's original context is 512: long factors. (Not
    # named "phi3": llama.cpp's vocabulary loader gives a general.name
    # containing it Phi-3's special tokens, which this vocabulary lacks.)
    phi_types = {"embd": "q8_0", "output": "q8_0", "q": "q8_0", "o": "f16", "up": "q4_0", "down": "q4_k"}

    def phi3(family, n_ctx_orig):
        scale = 131072 / 4096
        attn_factor = float(np.float32(np.sqrt(1 + np.log(scale) / np.log(4096))))
        return recipe(
            family, "phi3", "ggml-vocab-llama-bpe.gguf", 128256, 131072,
            [("attention.layer_norm_rms_epsilon", "f32", 1e-5),
             ("rope.freq_base", "f32", 10000.0),
             ("rope.scaling.original_context_length", "u32", n_ctx_orig),
             ("rope.scaling.attn_factor", "f32", attn_factor),
             ("attention.sliding_window", "u32", 262144)],
            phi_types, untied=True, rope_freqs=False, biases=False, n_rot=12, fused=True,
            longrope=True)
    return [llama, qwen2, yarn, qwen3, granite, nemo, phi3("phi4-mini", 4096),
            phi3("phi4-mini-long", 512)]


# ----------------------------------------------------------------- writer --

def vocab_path(vocab):
    """"model:F" is the repository's models/F (Gemma 3's vocabulary, from
    the 270M model); anything else a file of the shared tokenizers."""
    if vocab.startswith("model:"):
        return os.path.join(REPO, "models", vocab[len("model:"):])
    return os.path.join(VOCABS, vocab)


def write_model(r, path):
    import gguf
    V = gguf.GGUFValueType
    kinds = {"u32": V.UINT32, "f32": V.FLOAT32, "str": V.STRING}
    w = gguf.GGUFWriter(path, r["architecture"])
    own = {key for key, _, _ in r["metadata"]}
    for key, kind, value in r["metadata"]:
        if key == "general.architecture":
            continue
        w.add_key_value(key, value, kinds[kind])
    reader = gguf.GGUFReader(vocab_path(r["vocab"]))
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer.") or name in own:
            continue
        if field.types[0] == V.ARRAY:
            w.add_key_value(name, field.contents(), V.ARRAY, sub_type=field.types[1])
        else:
            w.add_key_value(name, field.contents(), field.types[0])
    sums = {}
    for t in r["tensors"]:
        data = tensor_bytes(t)
        sums[t["name"]] = checksum(data)
        rows = int(np.prod(t["ne"][1:]))
        if t["type"] == "f32":
            arr = np.frombuffer(data, dtype=np.float32).reshape(list(reversed(t["ne"])))
            w.add_tensor(t["name"], arr)
        elif t["type"] == "f16":
            arr = np.frombuffer(data, dtype=np.float16).reshape(list(reversed(t["ne"])))
            w.add_tensor(t["name"], arr)
        else:
            arr = np.frombuffer(data, dtype=np.uint8).reshape(rows, -1)
            w.add_tensor(t["name"], arr, raw_dtype=gguf.GGMLQuantizationType(TYPES[t["type"]]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sums


def step_models(args):
    os.makedirs(args.out, exist_ok=True)
    for r in recipes():
        path = os.path.join(args.out, r["family"] + ".gguf")
        write_model(r, path)
        log("wrote", path, os.path.getsize(path), "bytes")


# -------------------------------------------------------------- reference --

def prompts(r, n_vocab):
    rng = np.random.default_rng(fnv1a64(r["family"] + "/prompts") & 0xFFFFFFFF)
    return [[int(x) for x in rng.integers(0, n_vocab, size=n)] for n in PROMPT_LENGTHS]


def top(logits, k):
    order = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in order]


def run_llama_cpp(r, path):
    import importlib.metadata
    import llama_cpp
    from llama_cpp import Llama
    llm = Llama(path, n_ctx=N_CTX, n_batch=512, n_ubatch=512, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, logits_all=True, flash_attn=False, verbose=False)
    n_vocab = llm.n_vocab()

    def fresh():
        llm.reset()
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)

    rows = []
    for ids in prompts(r, n_vocab):
        fresh()
        llm.eval(ids)
        scores = np.array(llm.scores[:len(ids)], dtype=np.float32)
        positions = range(len(ids)) if len(ids) <= 40 else LONG_POSITIONS
        last = scores[-1]
        m = float(np.max(last))
        lse = m + float(np.log(np.sum(np.exp((last - m).astype(np.float64)))))
        row = {"tokens": ids,
               "positions": [{"position": p, "top": top(scores[p], TOP_K)} for p in positions],
               "last_top": top(last, LAST_TOP_K), "last_logsumexp": lse,
               "last_mean": float(np.mean(last.astype(np.float64)))}
        if len(ids) in GREEDY_FROM:
            steps = []
            for _ in range(GREEDY_STEPS):
                logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                (best, lb), (second, ls) = top(logits, 2)
                steps.append({"token": best, "logit": lb, "runner_up": second,
                              "runner_up_logit": ls})
                llm.eval([best])
            row["greedy"] = steps
        rows.append(row)
        log(r["family"], "prompt of", len(ids), "tokens: top", row["last_top"][:2])
    info = {"binding": "llama-cpp-python",
            "binding_version": importlib.metadata.version("llama_cpp_python"),
            "llama_cpp_commit": LLAMA_CPP_COMMIT,
            "context": {"n_ctx": N_CTX, "n_batch": 512, "n_ubatch": 512,
                        "n_threads": N_THREADS, "type_k": "f16", "type_v": "f16",
                        "flash_attn": False}}
    return n_vocab, rows, info


def step_reference(args):
    os.makedirs(OUT, exist_ok=True)
    for r in recipes():
        if args.family and r["family"] not in args.family:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, r["family"] + ".gguf")
            sums = write_model(r, path)
            n_vocab, rows, info = run_llama_cpp(r, path)
        for t in r["tensors"]:
            t["checksum"] = str(sums[t["name"]])  # decimal string: JSON-safe u64
            t["seed"] = str(t["seed"])
        out = dict(r, n_vocab=n_vocab, llama_cpp=info, prompts=rows)
        dest = os.path.join(OUT, r["family"] + ".json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=None, separators=(",", ":"))
            f.write("\n")
        log("wrote", os.path.relpath(dest, REPO), os.path.getsize(dest), "bytes")


# ------------------------------------------------------------------ sizes --

SIZES_OUT = os.path.join(OUT, "sizes")
SIZE_PROMPT = 300


def run_llama_cpp_size(r, path):
    """The 300-token prompt (top-8s at LONG_POSITIONS, the last position's
    top-32 / log-sum-exp / mean), 16 greedy decode steps after it, and the
    chat check: the conversation rendered with the file's template,
    tokenized by llama.cpp (special tokens parsed, BOS as the vocabulary
    says; a template's leading BOS text dropped then, as llama.cpp and our
    ChatTemplate do), and 16 greedy tokens."""
    import llama_cpp
    from llama_cpp import Llama

    import family_sizes
    llm = Llama(path, n_ctx=N_CTX, n_batch=512, n_ubatch=512, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, logits_all=True, flash_attn=False, verbose=False)
    n_vocab = llm.n_vocab()

    def fresh():
        llm.reset()
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)

    def greedy():
        steps = []
        for _ in range(GREEDY_STEPS):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            (best, lb), (second, ls) = top(logits, 2)
            steps.append({"token": best, "logit": lb, "runner_up": second,
                          "runner_up_logit": ls})
            llm.eval([best])
        return steps

    rng = np.random.default_rng(fnv1a64(r["family"] + "/prompts") & 0xFFFFFFFF)
    ids = [int(x) for x in rng.integers(0, n_vocab, size=SIZE_PROMPT)]
    fresh()
    llm.eval(ids)
    scores = np.array(llm.scores[:len(ids)], dtype=np.float32)
    last = scores[-1]
    m = float(np.max(last))
    lse = m + float(np.log(np.sum(np.exp((last - m).astype(np.float64)))))
    row = {"tokens": ids,
           "positions": [{"position": p, "top": top(scores[p], TOP_K)} for p in LONG_POSITIONS],
           "last_top": top(last, LAST_TOP_K), "last_logsumexp": lse,
           "last_mean": float(np.mean(last.astype(np.float64)))}
    row["greedy"] = greedy()
    log(r["family"], "300 tokens: top", row["last_top"][:2])

    template = dict((k, v) for k, _, v in r["metadata"])["tokenizer.chat_template"]
    bos = llm._model.token_get_text(llm.token_bos())
    eos = llm._model.token_get_text(llm.token_eos())
    text = family_sizes.render_chat(template, bos, eos)
    probe = llm.tokenize(b"", add_bos=True, special=True)
    if probe and text.startswith(bos):
        text = text[len(bos):]
    prompt = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    fresh()
    llm.eval(prompt)
    steps = greedy()
    out = llm.detokenize([s["token"] for s in steps], special=True)
    chat = {"messages": family_sizes.CONVERSATION, "bos_token": bos, "eos_token": eos,
            "text": text, "tokens": prompt, "greedy": steps, "generated_hex": out.hex()}
    log(r["family"], "chat prompt of", len(prompt), "tokens ->",
        [s["token"] for s in steps][:6])
    return n_vocab, row, chat


def step_sizes(args):
    import family_sizes
    os.makedirs(SIZES_OUT, exist_ok=True)
    for r in family_sizes.size_recipes(_tensor):
        if args.size and r["family"] not in args.size:
            continue
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            path = os.path.join(tmp, r["family"] + ".gguf")
            sums = write_model(r, path)
            log("wrote", path, os.path.getsize(path), "bytes")
            if args.models_only:
                continue
            n_vocab, row, chat = run_llama_cpp_size(r, path)
        for t in r["tensors"]:
            t["checksum"] = str(sums[t["name"]])
            t["seed"] = str(t["seed"])
        info = {"binding": "llama-cpp-python", "llama_cpp_commit": LLAMA_CPP_COMMIT,
                "context": {"n_ctx": N_CTX, "n_batch": 512, "n_ubatch": 512,
                            "n_threads": N_THREADS, "type_k": "f16", "type_v": "f16",
                            "flash_attn": False}}
        import importlib.metadata
        info["binding_version"] = importlib.metadata.version("llama_cpp_python")
        out = dict(r, n_vocab=n_vocab, llama_cpp=info, prompts=[row], chat=chat)
        dest = os.path.join(SIZES_OUT, r["family"] + ".json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=None, separators=(",", ":"))
            f.write("\n")
        log("wrote", os.path.relpath(dest, REPO), os.path.getsize(dest), "bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    m = sub.add_parser("models", help="write the GGUF models only")
    m.add_argument("--out", required=True)
    m.set_defaults(func=step_models)
    ref = sub.add_parser("reference", help="models + llama.cpp outputs -> tests/reference/families")
    ref.add_argument("family", nargs="*", help="a recipe's family name, e.g. qwen3 (default: all)")
    ref.set_defaults(func=step_reference)
    sz = sub.add_parser("sizes", help="the per-size recipes (family_sizes.py) + llama.cpp -> "
                        "tests/reference/families/sizes")
    sz.add_argument("size", nargs="*", help="e.g. gemma3-1b (default: all)")
    sz.add_argument("--tmp", default=None, help="where the GGUFs are written (deleted after)")
    sz.add_argument("--models-only", action="store_true", help="write the GGUFs, run nothing")
    sz.set_defaults(func=step_sizes)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
