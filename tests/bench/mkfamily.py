#!/usr/bin/python3
"""mkfamily.py - synthetic GGUF models with the shapes of real model-family checkpoints,
for speed and memory benchmarks (docs/performance.md). Their outputs are meaningless.

  /usr/bin/python3 tests/bench/mkfamily.py PRESET OUT.gguf [--layers N] [--gguf-py DIR] [--seed S]
  /usr/bin/python3 tests/bench/mkfamily.py --list

PRESET is one of the shapes below (the public config.json of each checkpoint). Weights are F16
(norms F32): numpy default_rng(seed) normals times 0.02 (norm weights 1.0, gemma's stored as 1.0
too); quantize the result with llama.cpp's llama-quantize (Q8_0, Q4_K_M, ...). --layers cuts the
model to its first N layers (the Qwen3-30B-A3B shape is benchmarked with 8 of its 48).

Tokenizer: the 512-token SentencePiece vocabulary of ../shared/models/stories260K.gguf padded with
NORMAL tokens "<synth_N>" to the checkpoint's vocabulary size, so that the embedding and output
matrices have their real shapes (a random model generates padding tokens often; benchmarks do not
care). Tensors are written one at a time (the 30B-A3B cut is ~10 GB in F16; peak memory stays near
one tensor).

Needs Debian's python3-numpy and llama.cpp's gguf-py (--gguf-py, default /tmp/llama.cpp/gguf-py).
"""
from __future__ import annotations

import argparse
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "models", "stories260K.gguf"))

# The shapes (config.json of the checkpoints).
PRESETS = {
    "qwen3-0.6b": dict(arch="qwen3", n_embd=1024, n_layer=28, n_head=16, n_head_kv=8, head_dim=128, n_ff=3072,
                       n_vocab=151936, ctx=40960, rope_theta=1e6, rms_eps=1e-6, tied=True),
    "gemma3-1b": dict(arch="gemma3", n_embd=1152, n_layer=26, n_head=4, n_head_kv=1, head_dim=256, n_ff=6912,
                      n_vocab=262144, ctx=32768, rope_theta=1e6, rms_eps=1e-6, tied=True, swa=512,
                      rope_theta_swa=10000.0),
    "qwen3-30b-a3b": dict(arch="qwen3moe", n_embd=2048, n_layer=48, n_head=32, n_head_kv=4, head_dim=128, n_ff=6144,
                          n_vocab=151936, ctx=40960, rope_theta=1e6, rms_eps=1e-6, tied=False, n_expert=128,
                          n_expert_used=8, n_ff_exp=768),
}


def import_gguf(path):
    sys.path.insert(0, path)
    try:
        import gguf
    except ModuleNotFoundError as e:  # some gguf-py versions import sentencepiece eagerly
        if e.name != "sentencepiece":
            raise
        stub = types.ModuleType("sentencepiece")
        stub.SentencePieceProcessor = None
        sys.modules["sentencepiece"] = stub
        import gguf
    return gguf


def vocab_keys(gguf, n_vocab):
    """(key, value type, value, element type) of the padded SPM tokenizer."""
    r = gguf.GGUFReader(VOCAB)
    VT = gguf.GGUFValueType
    out = []
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vt = VT(f.types[0])
        if vt == VT.ARRAY:
            et = VT(f.types[1])
            vals = [bytes(f.parts[i]) if et == VT.STRING else f.parts[i][0].item() for i in f.data]
            n0 = len(vals)
            if key == "tokenizer.ggml.tokens":
                vals += [f"<synth_{i}>".encode() for i in range(n0, n_vocab)]
            elif key == "tokenizer.ggml.scores":
                vals += [-1e4] * (n_vocab - n0)
            elif key == "tokenizer.ggml.token_type":
                vals += [int(gguf.TokenType.NORMAL)] * (n_vocab - n0)
            out.append((key, vt, vals, et))
        else:
            v = bytes(f.parts[f.data[0]]) if vt == VT.STRING else f.parts[f.data[0]][0].item()
            out.append((key, vt, bool(v) if vt == VT.BOOL else v, None))
    return out


def tensor_plan(c):
    """[(name, shape (outermost first), kind)]: kind 'w' random F16, 'one' F32 ones."""
    E, HD = c["n_embd"], c["head_dim"]
    Q, KV = c["n_head"] * HD, c["n_head_kv"] * HD
    plan = [("token_embd.weight", (c["n_vocab"], E), "w")]
    for i in range(c["n_layer"]):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", (E,), "one"),
                 (p + "attn_q.weight", (Q, E), "w"), (p + "attn_k.weight", (KV, E), "w"),
                 (p + "attn_v.weight", (KV, E), "w"), (p + "attn_output.weight", (E, Q), "w"),
                 (p + "attn_q_norm.weight", (HD,), "one"), (p + "attn_k_norm.weight", (HD,), "one"),
                 (p + "ffn_norm.weight", (E,), "one")]
        if c["arch"] == "gemma3":
            plan += [(p + "post_attention_norm.weight", (E,), "one"), (p + "post_ffw_norm.weight", (E,), "one")]
        if c.get("n_expert"):
            NE, FE = c["n_expert"], c["n_ff_exp"]
            plan += [(p + "ffn_gate_inp.weight", (NE, E), "w32"),
                     (p + "ffn_gate_exps.weight", (NE, FE, E), "w"), (p + "ffn_up_exps.weight", (NE, FE, E), "w"),
                     (p + "ffn_down_exps.weight", (NE, E, FE), "w")]
        else:
            plan += [(p + "ffn_gate.weight", (c["n_ff"], E), "w"), (p + "ffn_up.weight", (c["n_ff"], E), "w"),
                     (p + "ffn_down.weight", (E, c["n_ff"]), "w")]
    plan.append(("output_norm.weight", (E,), "one"))
    if not c["tied"]:
        plan.append(("output.weight", (c["n_vocab"], E), "w"))
    return plan


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("preset", nargs="?", choices=sorted(PRESETS))
    ap.add_argument("out", nargs="?")
    ap.add_argument("--layers", type=int, help="keep the first N layers")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--gguf-py", default="/tmp/llama.cpp/gguf-py")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for k, v in PRESETS.items():
            print(k, v)
        return
    if not a.preset or not a.out:
        ap.error("PRESET and OUT are required")
    import numpy as np
    gguf = import_gguf(a.gguf_py)
    c = dict(PRESETS[a.preset])
    if a.layers:
        if not 0 < a.layers <= c["n_layer"]:
            ap.error(f"--layers must be 1..{c['n_layer']}")
        c["n_layer"] = a.layers
    arch = c["arch"]
    plan = tensor_plan(c)
    n_params = sum(int(np.prod(s)) for _, s, _ in plan)

    w = gguf.GGUFWriter(a.out, arch)
    w.add_type("model")
    cut = f", first {c['n_layer']} layers" if a.layers else ""
    w.add_name(f"{a.preset}{cut} (synthetic)")
    w.add_description(f"SYNTHETIC random weights (normal std 0.02, seed {a.seed}) with the shapes of {a.preset}{cut}; "
                      "made by llm-fcgi tests/bench/mkfamily.py for benchmarks; outputs are meaningless")
    w.add_block_count(c["n_layer"])
    w.add_context_length(c["ctx"])
    w.add_embedding_length(c["n_embd"])
    w.add_feed_forward_length(c["n_ff"])
    w.add_head_count(c["n_head"])
    w.add_head_count_kv(c["n_head_kv"])
    w.add_key_length(c["head_dim"])
    w.add_value_length(c["head_dim"])
    w.add_rope_freq_base(float(c["rope_theta"]))
    w.add_layer_norm_rms_eps(float(c["rms_eps"]))
    w.add_vocab_size(c["n_vocab"])
    w.add_file_type(1)
    if c.get("swa"):
        w.add_sliding_window(c["swa"])
        w.add_float32(f"{arch}.rope.freq_base_swa", float(c["rope_theta_swa"]))
    if c.get("n_expert"):
        w.add_expert_count(c["n_expert"])
        w.add_expert_used_count(c["n_expert_used"])
        w.add_expert_feed_forward_length(c["n_ff_exp"])
    VT = gguf.GGUFValueType
    sig = w.add_key_value.__code__.co_varnames
    for k, vt, v, et in vocab_keys(gguf, c["n_vocab"]):
        if vt == VT.ARRAY:
            if "sub_type" in sig:
                w.add_key_value(k, v, VT.ARRAY, sub_type=et)
            else:
                w.add_array(k, v)
        else:
            w.add_key_value(k, v, vt)

    # tensor infos first, then the data one tensor at a time
    dtypes = {"w": np.float16, "w32": np.float32, "one": np.float32}
    for name, shape, kind in plan:
        nbytes = int(np.prod(shape)) * np.dtype(dtypes[kind]).itemsize
        w.add_tensor_info(name, shape, np.dtype(dtypes[kind]), nbytes)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(a.seed)
    for name, shape, kind in plan:
        if kind == "one":
            arr = np.ones(shape, dtype=np.float32)
        else:
            arr = np.empty(shape, dtype=dtypes[kind])
            flat = arr.reshape(-1)
            step = 1 << 24
            for i in range(0, flat.size, step):
                n = min(step, flat.size - i)
                flat[i:i + n] = rng.standard_normal(n, dtype=np.float32) * np.float32(0.02)
        w.write_tensor_data(arr)
    w.close()
    print(f"{a.out}: {arch} {a.preset}{cut}: {n_params:,} parameters", flush=True)


if __name__ == "__main__":
    main()
