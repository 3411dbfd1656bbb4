#!/usr/bin/python3
"""mkfamily.py - synthetic GGUF models with the shapes of real model-family checkpoints,
for speed and memory benchmarks (docs/performance.md). Their outputs are meaningless.

  /usr/bin/python3 tests/bench/mkfamily.py PRESET OUT.gguf [--layers N] [--gguf-py DIR] [--seed S]
  /usr/bin/python3 tests/bench/mkfamily.py --list

PRESET is one of the shapes below (the public config.json of each checkpoint). Weights are F16
(norms F32): numpy default_rng(seed) normals times 0.02 (norm weights 1.0, gemma's stored as 1.0
too); quantize the result with llama.cpp's llama-quantize (Q8_0, Q4_K_M, ...). --layers cuts the
model to its first N layers (the Qwen3-30B-A3B shape is benchmarked with 8 of its 48).

The 2026 hybrids (issue 28) write the keys and tensors llama.cpp's converters write for them
(qwen35 / qwen35moe: Gated DeltaNet layers with full_attention_interval 4, no MTP block; gemma4:
per-layer head sizes, KV sharing over the last layers scaled with the cut, per-layer embeddings,
proportional rope_freqs; lfm2: short-convolution and attention layers by head_count_kv). Their
recurrent parameters (ssm_a, ssm_dt) get the signs and scales of real checkpoints so the state
neither explodes nor vanishes.

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
    # ---- the 2026 hybrids ----
    # Qwen3.5-2B: 24 layers (3 Gated DeltaNet : 1 gated attention), attention 8 q / 2 kv heads of 256 with
    # 25% rotary (IMROPE sections 11,11,10), GDN 16 q,k / 16 v heads of 128, conv 4
    "qwen3.5-2b": dict(arch="qwen35", n_embd=2048, n_layer=24, n_head=8, n_head_kv=2, head_dim=256, n_ff=6144,
                       n_vocab=248320, ctx=262144, rope_theta=1e7, rms_eps=1e-6, tied=True, n_rot=64,
                       sections=[11, 11, 10, 0], interval=4, ssm=dict(conv=4, state=128, groups=16, v_heads=16)),
    # Qwen3.5-35B-A3B: 40 layers, 256 experts (8 used) of 512 + a shared expert of 512, attention 16 / 2 heads
    # of 256, GDN 16 q,k / 32 v heads of 128
    "qwen3.5-35b-a3b": dict(arch="qwen35moe", n_embd=2048, n_layer=40, n_head=16, n_head_kv=2, head_dim=256, n_ff=0,
                            n_vocab=248320, ctx=262144, rope_theta=1e7, rms_eps=1e-6, tied=False, n_rot=64,
                            sections=[11, 11, 10, 0], interval=4, ssm=dict(conv=4, state=128, groups=16, v_heads=32),
                            n_expert=256, n_expert_used=8, n_ff_exp=512, n_ff_shexp=512),
    # Gemma 4 E4B: 42 layers, 5 window (512, heads of 256) : 1 full (heads of 512, 25% proportional rope),
    # 8 q / 2 kv heads, the last 18 layers share KV (double-wide FFN there), per-layer embeddings of 256
    "gemma4-e4b": dict(arch="gemma4", n_embd=2560, n_layer=42, n_head=8, n_head_kv=2, head_dim=512, head_dim_swa=256,
                       n_ff=10240, n_vocab=262144, ctx=131072, rope_theta=1e6, rope_theta_swa=1e4, rms_eps=1e-6,
                       tied=True, swa=512, swa_period=6, kv_shared=18, n_embd_per_layer=256, softcap=30.0),
    # LFM2-1.2B: 16 layers, attention at 2, 5, 8, 10, 12, 14 (32 q / 8 kv heads of 64), the others gated short
    # convolutions (L_cache 3), FFN 8192
    "lfm2-1.2b": dict(arch="lfm2", n_embd=2048, n_layer=16, n_head=32, n_head_kv=8, head_dim=64, n_ff=8192,
                      n_vocab=65536, ctx=128000, rope_theta=1e6, rms_eps=1e-5, tied=True, l_cache=3,
                      attn_layers=[2, 5, 8, 10, 12, 14]),
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


def plan_ffn(p, c, E, ff=None):
    """A layer's FFN: routed experts (router F32) or a dense gated FFN of width ff (default n_ff)."""
    if c.get("n_expert"):
        NE, FE = c["n_expert"], c["n_ff_exp"]
        return [(p + "ffn_gate_inp.weight", (NE, E), "w32"),
                (p + "ffn_gate_exps.weight", (NE, FE, E), "w"), (p + "ffn_up_exps.weight", (NE, FE, E), "w"),
                (p + "ffn_down_exps.weight", (NE, E, FE), "w")]
    ff = ff or c["n_ff"]
    return [(p + "ffn_gate.weight", (ff, E), "w"), (p + "ffn_up.weight", (ff, E), "w"),
            (p + "ffn_down.weight", (E, ff), "w")]


def plan_output(plan, c, E, norm="output_norm.weight"):
    plan.append((norm, (E,), "one"))
    if not c["tied"]:
        plan.append(("output.weight", (c["n_vocab"], E), "w"))
    return plan


def plan_qwen35(c):
    """qwen35 / qwen35moe: GDN layers where (i + 1) % interval != 0, gated attention otherwise."""
    E, HD, m = c["n_embd"], c["head_dim"], c["ssm"]
    S, NG, DR, K = m["state"], m["groups"], m["v_heads"], m["conv"]
    DI, CH = DR * S, 2 * NG * S + DR * S
    plan = [("token_embd.weight", (c["n_vocab"], E), "w")]
    for i in range(c["n_layer"]):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", (E,), "one"), (p + "post_attention_norm.weight", (E,), "one")]
        if (i + 1) % c["interval"]:
            plan += [(p + "attn_qkv.weight", (CH, E), "w"), (p + "attn_gate.weight", (DI, E), "w"),
                     (p + "ssm_conv1d.weight", (CH, K), "conv"), (p + "ssm_dt.bias", (DR,), "one"),
                     (p + "ssm_a", (DR,), "ssm_a"), (p + "ssm_beta.weight", (DR, E), "w"),
                     (p + "ssm_alpha.weight", (DR, E), "w"), (p + "ssm_norm.weight", (S,), "one"),
                     (p + "ssm_out.weight", (E, DI), "w")]
        else:
            Q, KV = c["n_head"] * HD, c["n_head_kv"] * HD
            plan += [(p + "attn_q.weight", (2 * Q, E), "w"), (p + "attn_k.weight", (KV, E), "w"),
                     (p + "attn_v.weight", (KV, E), "w"), (p + "attn_output.weight", (E, Q), "w"),
                     (p + "attn_q_norm.weight", (HD,), "one"), (p + "attn_k_norm.weight", (HD,), "one")]
        plan += plan_ffn(p, c, E)
        if c.get("n_ff_shexp"):
            FS = c["n_ff_shexp"]
            plan += [(p + "ffn_gate_inp_shexp.weight", (1, E), "w32"), (p + "ffn_gate_shexp.weight", (FS, E), "w"),
                     (p + "ffn_up_shexp.weight", (FS, E), "w"), (p + "ffn_down_shexp.weight", (E, FS), "w")]
    return plan_output(plan, c, E)


def gemma4_layers(c):
    """Per layer: (window?, head size, FFN width, own KV?)."""
    n, period, shared = c["n_layer"], c["swa_period"], c["kv_shared"]
    out = []
    for i in range(n):
        swa = i % period < period - 1
        out.append((swa, c["head_dim_swa"] if swa else c["head_dim"],
                    c["n_ff"] * (2 if i >= n - shared else 1), i < n - shared))
    return out


def plan_gemma4(c):
    E, D, L = c["n_embd"], c["n_embd_per_layer"], c["n_layer"]
    plan = [("token_embd.weight", (c["n_vocab"], E), "w"),
            ("per_layer_token_embd.weight", (c["n_vocab"], L * D), "w"),
            ("per_layer_model_proj.weight", (L * D, E), "w"), ("per_layer_proj_norm.weight", (D,), "one"),
            ("rope_freqs.weight", (c["head_dim"] // 2,), "rope_freqs")]
    for i, (swa, hd, ff, own) in enumerate(gemma4_layers(c)):
        p = f"blk.{i}."
        Q, KV = c["n_head"] * hd, c["n_head_kv"] * hd
        plan += [(p + "attn_norm.weight", (E,), "one"), (p + "attn_q.weight", (Q, E), "w"),
                 (p + "attn_output.weight", (E, Q), "w"), (p + "attn_q_norm.weight", (hd,), "one")]
        if own:
            plan += [(p + "attn_k.weight", (KV, E), "w"), (p + "attn_v.weight", (KV, E), "w"),
                     (p + "attn_k_norm.weight", (hd,), "one")]
        plan += [(p + "post_attention_norm.weight", (E,), "one"), (p + "ffn_norm.weight", (E,), "one")]
        plan += plan_ffn(p, c, E, ff)
        plan += [(p + "post_ffw_norm.weight", (E,), "one"),
                 (p + "inp_gate.weight", (D, E), "w"), (p + "proj.weight", (E, D), "w"),
                 (p + "post_norm.weight", (E,), "one"), (p + "layer_output_scale.weight", (1,), "one")]
    return plan_output(plan, c, E)


def plan_lfm2(c):
    E, HD = c["n_embd"], c["head_dim"]
    plan = [("token_embd.weight", (c["n_vocab"], E), "w")]
    for i in range(c["n_layer"]):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", (E,), "one"), (p + "ffn_norm.weight", (E,), "one")]
        if i in c["attn_layers"]:
            KV = c["n_head_kv"] * HD
            plan += [(p + "attn_q.weight", (E, E), "w"), (p + "attn_k.weight", (KV, E), "w"),
                     (p + "attn_v.weight", (KV, E), "w"), (p + "attn_output.weight", (E, E), "w"),
                     (p + "attn_q_norm.weight", (HD,), "one"), (p + "attn_k_norm.weight", (HD,), "one")]
        else:
            plan += [(p + "shortconv.conv.weight", (E, c["l_cache"]), "conv"),
                     (p + "shortconv.in_proj.weight", (3 * E, E), "w"), (p + "shortconv.out_proj.weight", (E, E), "w")]
        plan += plan_ffn(p, c, E)
    return plan_output(plan, c, E, "token_embd_norm.weight")


def hybrid_keys(w, c, arch):
    """The keys llama.cpp's converters write for the 2026 families (beyond the common ones)."""
    k = lambda s: f"{arch}.{s}"
    if arch in ("qwen35", "qwen35moe"):
        m = c["ssm"]
        w.add_uint32(k("rope.dimension_count"), c["n_rot"])
        w.add_array(k("rope.dimension_sections"), c["sections"])
        w.add_uint32(k("ssm.conv_kernel"), m["conv"])
        w.add_uint32(k("ssm.state_size"), m["state"])
        w.add_uint32(k("ssm.group_count"), m["groups"])
        w.add_uint32(k("ssm.time_step_rank"), m["v_heads"])
        w.add_uint32(k("ssm.inner_size"), m["v_heads"] * m["state"])
        w.add_uint32(k("full_attention_interval"), c["interval"])
        w.add_uint32(k("nextn_predict_layers"), 0)
        if c.get("n_ff_shexp"):
            w.add_uint32(k("expert_shared_feed_forward_length"), c["n_ff_shexp"])
    elif arch == "gemma4":
        layers = gemma4_layers(c)
        w.add_array(k("attention.sliding_window_pattern"), [swa for swa, _, _, _ in layers])
        w.add_uint32(k("attention.key_length_swa"), c["head_dim_swa"])
        w.add_uint32(k("attention.value_length_swa"), c["head_dim_swa"])
        w.add_uint32(k("rope.dimension_count"), c["head_dim"])
        w.add_uint32(k("rope.dimension_count_swa"), c["head_dim_swa"])
        w.add_uint32(k("attention.shared_kv_layers"), c["kv_shared"])
        w.add_uint32(k("embedding_length_per_layer_input"), c["n_embd_per_layer"])
        w.add_float32(k("final_logit_softcapping"), c["softcap"])
    elif arch == "lfm2":
        w.add_uint32(k("shortconv.l_cache"), c["l_cache"])


def tensor_plan(c):
    """[(name, shape (outermost first), kind)]: kind 'w' random F16, 'one' F32 ones (and the hybrids'
    'conv' F32 kernels, 'ssm_a' F32 negative decays, 'rope_freqs' proportional rope factors)."""
    if c["arch"] in ("qwen35", "qwen35moe"):
        return plan_qwen35(c)
    if c["arch"] == "gemma4":
        return plan_gemma4(c)
    if c["arch"] == "lfm2":
        return plan_lfm2(c)
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
        plan += plan_ffn(p, c, E)
    return plan_output(plan, c, E)


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
        if c["arch"] == "gemma4":
            # keep about the share of KV-sharing layers, starting after a full layer (llama.cpp's
            # sharing rule takes the full layer just before them and the window layer before that)
            per = c["swa_period"]
            start = (a.layers - c["kv_shared"] * a.layers // c["n_layer"]) // per * per
            c["kv_shared"] = a.layers - start if start >= per else 0
        c["n_layer"] = a.layers
        if c["arch"] == "lfm2":
            c["attn_layers"] = [i for i in c["attn_layers"] if i < a.layers]
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
    if arch == "gemma4":
        w.add_array(f"{arch}.feed_forward_length", [ff for _, _, ff, _ in gemma4_layers(c)])
    elif c["n_ff"]:
        w.add_feed_forward_length(c["n_ff"])
    w.add_head_count(c["n_head"])
    if arch == "lfm2":
        w.add_array(f"{arch}.attention.head_count_kv",
                    [c["n_head_kv"] if i in c["attn_layers"] else 0 for i in range(c["n_layer"])])
    else:
        w.add_head_count_kv(c["n_head_kv"])
    if arch != "lfm2":
        w.add_key_length(c["head_dim"])
        w.add_value_length(c["head_dim"])
    w.add_rope_freq_base(float(c["rope_theta"]))
    w.add_layer_norm_rms_eps(float(c["rms_eps"]))
    w.add_vocab_size(c["n_vocab"])
    w.add_file_type(1)
    if c.get("swa"):
        w.add_sliding_window(c["swa"])
        w.add_float32(f"{arch}.rope.freq_base_swa", float(c["rope_theta_swa"]))
    hybrid_keys(w, c, arch)
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
    dtypes = {"w": np.float16, "w32": np.float32, "one": np.float32, "conv": np.float32, "ssm_a": np.float32,
              "rope_freqs": np.float32}
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
        elif kind == "ssm_a":  # -exp(A_log), A_log ~ log U(1, 16) as initialised
            arr = -np.exp(rng.uniform(0.0, np.log(16.0), shape)).astype(np.float32)
        elif kind == "conv":  # depthwise kernels of unit scale
            arr = (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.5)).astype(np.float32)
        elif kind == "rope_freqs":  # proportional rope: 25% of the pairs rotate
            arr = np.full(shape, 1e30, dtype=np.float32)
            arr[: shape[0] // 4] = 1.0
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
