"""The per-size recipes of make_family_reference.py (issue 35): for each real
model in the table below a random-weight GGUF with that model's metadata —
every hyperparameter key as its converted file has it, its vocabulary where
we have it, its chat template — and its per-layer shapes, with fewer layers.

Layers kept: 2 for models under 7B, 1 from 7B up (the vocabulary-sized
embeddings dominate the file either way); Gemma 3 keeps 6, its 5 local : 1
global pattern (llama.cpp's default period 6, no key in the file), so that
layer 5 is a global layer with the global RoPE base and scaling.

Tensor types follow llama.cpp's Q4_K_M: Q4_K matrices, Q6_K for attn_v and
ffn_down in layer 0 (Q4_K_M's "more bits" layers) and for the output (the
tied embeddings when there is no output.weight), Q4_K untied embeddings;
where a row's length is not a multiple of 256 (Qwen 2.5 0.5B's 896, Gemma 3
1B's 1152) Q5_0 stands for Q4_K and Q8_0 for Q6_K, llama.cpp's fallbacks.

Stand-ins, as in the family goldens: Mistral Nemo's Tekken (131072) and
Phi-4-mini's o200k (200064) vocabularies by Llama 3's BPE; Granite's
(49155) by GPT-2's; Qwen 2.5 7B / 14B pad their vocabulary to 152064, here
the 151936 tokens of ggml-vocab-qwen2.gguf (0.5B's size).
"""

import os

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LLAMA_TEMPLATES = os.path.join(os.path.expanduser("~"), ".cache", "ellm", "llama.cpp-npm",
                               "node-llama-cpp-3.22.1", "src", "models", "templates")
OUR_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

GEMMA_VOCAB = "model:gemma-3-270m-q4_k_m.gguf"  # the repository's models/ file
N_VOCAB = {"ggml-vocab-qwen2.gguf": 151936, "ggml-vocab-llama-bpe.gguf": 128256,
           "ggml-vocab-gpt-2.gguf": 50257, GEMMA_VOCAB: 262144}

# The sizes whose files are too big for CI (0.5-2.5 GB): ctest label nightly.
NIGHTLY = {"gemma3-12b", "gemma3-27b", "qwen2.5-7b", "qwen2.5-14b", "qwen3-8b", "qwen3-14b",
           "llama3.1-8b", "mistral-nemo-12b", "granite3-8b", "gemma3-4b", "qwen3-4b",
           "llama3.2-3b", "phi4-mini"}

# From 7B up one layer is kept.
BIG = {"qwen2.5-7b", "qwen2.5-14b", "qwen3-8b", "qwen3-14b", "llama3.1-8b", "mistral-nemo-12b",
       "granite3-8b"}

# name: arch, vocab, template, n_embd, n_ff, heads, kv heads, head_dim,
#       layers of the real model, tied output, extra metadata.
SIZES = [
    ("gemma3-1b", "gemma3", GEMMA_VOCAB, "@google-gemma-3-it.jinja",
     1152, 6912, 4, 1, 256, 26, True,
     [("context_length", "u32", 32768), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0), ("attention.sliding_window", "u32", 512)]),
    ("gemma3-4b", "gemma3", GEMMA_VOCAB, "@google-gemma-3-it.jinja",
     2560, 10240, 8, 4, 256, 34, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0), ("attention.sliding_window", "u32", 1024),
      ("rope.scaling.type", "str", "linear"), ("rope.scaling.factor", "f32", 8.0)]),
    ("gemma3-12b", "gemma3", GEMMA_VOCAB, "@google-gemma-3-it.jinja",
     3840, 15360, 16, 8, 256, 48, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0), ("attention.sliding_window", "u32", 1024),
      ("rope.scaling.type", "str", "linear"), ("rope.scaling.factor", "f32", 8.0)]),
    ("gemma3-27b", "gemma3", GEMMA_VOCAB, "@google-gemma-3-it.jinja",
     5376, 21504, 32, 16, 128, 62, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0), ("attention.sliding_window", "u32", 1024),
      ("rope.scaling.type", "str", "linear"), ("rope.scaling.factor", "f32", 8.0)]),
    # Not a real size: Gemma 3 27B's 62 layers, which make llama.cpp scale
    # queries by 1 / sqrt(n_embd / n_head) (here 64 / 4 = 16, heads of 32)
    # instead of 1 / sqrt(head_dim); all 62 kept, tiny per-layer shapes.
    ("gemma3-62-layers", "gemma3", GEMMA_VOCAB, "@google-gemma-3-it.jinja",
     64, 256, 4, 2, 32, 62, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0), ("attention.sliding_window", "u32", 1024),
      ("rope.scaling.type", "str", "linear"), ("rope.scaling.factor", "f32", 8.0)]),
    ("qwen2.5-0.5b", "qwen2", "ggml-vocab-qwen2.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja",
     896, 4864, 14, 2, 64, 24, True,
     [("context_length", "u32", 32768), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("qwen2.5-7b", "qwen2", "ggml-vocab-qwen2.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja",
     3584, 18944, 28, 4, 128, 28, False,
     [("context_length", "u32", 32768), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("qwen2.5-14b", "qwen2", "ggml-vocab-qwen2.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja",
     5120, 13824, 40, 8, 128, 48, False,
     [("context_length", "u32", 32768), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("qwen3-0.6b", "qwen3", "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja",
     1024, 3072, 16, 8, 128, 28, True,
     [("context_length", "u32", 40960), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("qwen3-4b", "qwen3", "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja",
     2560, 9728, 32, 8, 128, 36, True,
     [("context_length", "u32", 40960), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("qwen3-8b", "qwen3", "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja",
     4096, 12288, 32, 8, 128, 36, False,
     [("context_length", "u32", 40960), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("qwen3-14b", "qwen3", "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja",
     5120, 17408, 40, 8, 128, 40, False,
     [("context_length", "u32", 40960), ("attention.layer_norm_rms_epsilon", "f32", 1e-6),
      ("rope.freq_base", "f32", 1000000.0)]),
    ("llama3.2-1b", "llama", "ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.2-3B-Instruct.jinja",
     2048, 8192, 32, 8, 64, 16, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-5),
      ("rope.freq_base", "f32", 500000.0), ("vocab_size", "u32", 128256)]),
    ("llama3.2-3b", "llama", "ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.2-3B-Instruct.jinja",
     3072, 8192, 24, 8, 128, 28, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-5),
      ("rope.freq_base", "f32", 500000.0), ("vocab_size", "u32", 128256)]),
    ("llama3.1-8b", "llama", "ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.1-8B-Instruct.jinja",
     4096, 14336, 32, 8, 128, 32, False,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-5),
      ("rope.freq_base", "f32", 500000.0), ("vocab_size", "u32", 128256)]),
    ("mistral-nemo-12b", "llama", "ggml-vocab-llama-bpe.gguf",
     "mistralai-Mistral-Nemo-Instruct-2407.jinja",
     5120, 14336, 32, 8, 128, 40, False,
     [("context_length", "u32", 1024000), ("attention.layer_norm_rms_epsilon", "f32", 1e-5),
      ("rope.freq_base", "f32", 1000000.0), ("vocab_size", "u32", 128256)]),
    ("phi4-mini", "phi3", "ggml-vocab-llama-bpe.gguf", "@microsoft-Phi-4-mini-instruct.jinja",
     3072, 8192, 24, 8, 128, 32, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-5),
      ("rope.freq_base", "f32", 10000.0), ("rope.dimension_count", "u32", 96),
      ("rope.scaling.original_context_length", "u32", 4096),
      ("rope.scaling.attn_factor", "f32",
       float(np.float32(np.sqrt(1 + np.log(131072 / 4096) / np.log(4096))))),
      ("attention.sliding_window", "u32", 262144)]),
    ("granite3-8b", "granite", "ggml-vocab-gpt-2.gguf", "ibm-granite-granite-3.3-2B-Instruct.jinja",
     4096, 12800, 32, 8, 128, 40, True,
     [("context_length", "u32", 131072), ("attention.layer_norm_rms_epsilon", "f32", 1e-5),
      ("rope.freq_base", "f32", 10000000.0), ("embedding_scale", "f32", 12.0),
      ("residual_scale", "f32", 0.22), ("attention.scale", "f32", 0.0078125),
      ("logit_scale", "f32", 16.0), ("vocab_size", "u32", 50257)]),
]


def template_text(name):
    path = (os.path.join(OUR_TEMPLATES, name[1:]) if name.startswith("@")
            else os.path.join(LLAMA_TEMPLATES, name))
    with open(path, encoding="utf-8") as f:
        return f.read()


def q4(ne0):
    return "q4_k" if ne0 % 256 == 0 else "q5_0"


def q6(ne0):
    return "q6_k" if ne0 % 256 == 0 else "q8_0"


def size_recipe(size, tensor):
    """The recipe of one size; `tensor` is make_family_reference._tensor."""
    name, arch, vocab, tmpl, E, F, H, HKV, D, n_layer_real, tied, meta = size
    gemma = arch == "gemma3"
    L = n_layer_real if name == "gemma3-62-layers" else 6 if gemma else 1 if name in BIG else 2
    n_vocab = N_VOCAB[vocab]
    R = dict((k, v) for k, _, v in meta).get("rope.dimension_count", D)
    metadata = [["general.architecture", "str", arch],
                ["general.name", "str", "ellm-test-" + name]]
    keys = [("embedding_length", "u32", E), ("block_count", "u32", L),
            ("feed_forward_length", "u32", F), ("attention.head_count", "u32", H),
            ("attention.head_count_kv", "u32", HKV), ("attention.key_length", "u32", D),
            ("attention.value_length", "u32", D)]
    if "rope.dimension_count" not in [k for k, _, _ in meta]:
        keys.append(("rope.dimension_count", "u32", D))
    for k, kind, v in keys + meta:
        metadata.append([arch + "." + k, kind, v])
    metadata.append(["tokenizer.chat_template", "str", template_text(tmpl)])
    w = lambda n_in: 1.0 / np.sqrt(n_in)  # noqa: E731
    T = lambda *a, **k: tensor(name, *a, **k)  # noqa: E731
    # Tied: the embeddings are the output matrix, scaled so that logits stay
    # a few units (llama.cpp's rounding noise grows with them); Gemma
    # multiplies its input embeddings by sqrt(n_embd).
    embd_type = q6(E) if tied else q4(E)
    tensors = [T("token_embd.weight", [E, n_vocab], embd_type,
                 scale=4 * w(E) if tied else 1.0),
               T("output_norm.weight", [E], "f32", offset=1.0, amp=0.25)]
    if not tied:
        tensors.append(T("output.weight", [E, n_vocab], q6(E), scale=4 * w(E)))
    if arch == "llama" and name.startswith("llama"):
        # Llama 3.1 / 3.2's llama3 RoPE scaling as factors; these in [1, 3).
        tensors.append(T("rope_freqs.weight", [D // 2], "f32", offset=2.0, amp=1.0))
    if arch == "phi3":
        tensors += [T("rope_factors_short.weight", [R // 2], "f32", offset=2.0, amp=1.0),
                    T("rope_factors_long.weight", [R // 2], "f32", offset=16.0, amp=8.0)]
    # Norm weights near 1 (Gemma's converter stores 1 + w).
    nw = dict(offset=1.0, amp=0.25)
    for il in range(L):
        p = "blk.%d." % il
        more = il == 0  # Q4_K_M's Q6_K layers for attn_v / ffn_down
        tensors.append(T(p + "attn_norm.weight", [E], "f32", **nw))
        if arch == "phi3":
            tensors.append(T(p + "attn_qkv.weight", [E, (H + 2 * HKV) * D], q4(E),
                             scale=2 * w(E)))
        else:
            tensors += [T(p + "attn_q.weight", [E, H * D], q4(E), scale=2 * w(E)),
                        T(p + "attn_k.weight", [E, HKV * D], q4(E), scale=2 * w(E)),
                        T(p + "attn_v.weight", [E, HKV * D], q6(E) if more else q4(E),
                          scale=w(E))]
        if arch == "qwen2":
            tensors += [T(p + "attn_q.bias", [H * D], "f32", amp=0.5),
                        T(p + "attn_k.bias", [HKV * D], "f32", amp=0.5),
                        T(p + "attn_v.bias", [HKV * D], "f32", amp=0.125)]
        if arch in ("qwen3", "gemma3"):
            tensors += [T(p + "attn_q_norm.weight", [D], "f32", **nw),
                        T(p + "attn_k_norm.weight", [D], "f32", **nw)]
        tensors.append(T(p + "attn_output.weight", [H * D, E], q4(H * D), scale=w(H * D)))
        if gemma:
            tensors.append(T(p + "post_attention_norm.weight", [E], "f32", **nw))
        tensors.append(T(p + "ffn_norm.weight", [E], "f32", **nw))
        if arch == "phi3":
            tensors.append(T(p + "ffn_up.weight", [E, 2 * F], q4(E), scale=2 * w(E)))
        else:
            tensors += [T(p + "ffn_gate.weight", [E, F], q4(E), scale=2 * w(E)),
                        T(p + "ffn_up.weight", [E, F], q4(E), scale=w(E))]
        tensors.append(T(p + "ffn_down.weight", [F, E], q6(F) if more else q4(F), scale=w(F)))
        if gemma:
            tensors.append(T(p + "post_ffw_norm.weight", [E], "f32", **nw))
    return {"family": name, "architecture": arch, "vocab": vocab, "metadata": metadata,
            "tensors": tensors, "layers_real": n_layer_real, "nightly": name in NIGHTLY}


def size_recipes(tensor):
    return [size_recipe(s, tensor) for s in SIZES]


# The conversation of the chat check: system, user, assistant, user; the
# prompt ends with the generation prompt.
CONVERSATION = [
    {"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris is the capital of France."},
    {"role": "user", "content": "And which river runs through it?"},
]


def render_chat(template, bos, eos):
    """The conversation through `template` as llama.cpp's minja would render
    it without a clock: strftime_now undefined (Llama 3.2 then prints its
    own default date, as our engine's test pins it)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=CONVERSATION, add_generation_prompt=True,
                                            bos_token=bos, eos_token=eos)
