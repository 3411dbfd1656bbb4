#!/usr/bin/env python3
"""mkvision_real.py - real-shape synthetic vision pairs for encoder speed runs (tests/bench/vision_vs_mtmd.sh).

Adds presets with the shapes of released vision encoders to ../shared/tools/mkmmproj.py (projectors) and
../shared/tools/mkarch_vision.py (the text half llama-mtmd-cli needs: only its width must be the projector's
output width, so its other shapes stay tiny), then runs that tool unchanged:

  python3 tests/bench/mkvision_real.py mmproj PRESET OUT.gguf [mkmmproj.py options, e.g. --dtype f16]
  python3 tests/bench/mkvision_real.py text   PRESET OUT.gguf [mkarch_vision.py options]

  mmproj presets                 shape of                                   text preset (width)
  mmproj-gemma3-4b-siglip        Gemma 3 4B: SigLIP so400m, 896 px, 27 x 1152, pooled to 256 tokens -> 2560
                                                                            gemma3-w2560
  mmproj-qwen25vl-3b             Qwen2.5-VL-3B: 32 x 1280, SwiGLU 3420, window attention (full every 8th),
                                 2x2 merger -> 2048                          qwen2vl-w2048

Random weights (the tools' scales): the outputs are meaningless; the files exist for timing only. Put them
outside the repository (e.g. /work/bm). Needs numpy and llama.cpp's gguf-py ($GGUF_PY or --gguf-py);
$LLM_SHARED_TOOLS names the tools folder (default: ../shared/tools beside the repository).
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
tools = os.environ.get("LLM_SHARED_TOOLS") or os.path.join(here, "..", "..", "..", "shared", "tools")
sys.path.insert(0, tools)

if len(sys.argv) < 2 or sys.argv[1] not in ("mmproj", "text"):
    sys.exit(__doc__)
kind = sys.argv.pop(1)

if kind == "mmproj":
    import mkmmproj as tool
    gemma = tool.PRESETS["mmproj-tinygemma3v"]
    qwen = tool.PRESETS["mmproj-tinyqwen25vl"]
    tool.PRESETS["mmproj-gemma3-4b-siglip"] = dict(
        gemma, text="gemma3-w2560",
        hp=dict(gemma["hp"], n_embd=1152, n_ff=4304, n_layer=27, n_head=16, image_size=896, patch_size=14,
                proj_dim=2560),
        std=dict(gemma["std"], attn=0.03, ffn=0.03, mm1=0.02))
    tool.PRESETS["mmproj-qwen25vl-3b"] = dict(
        qwen, text="qwen2vl-w2048",
        hp=dict(qwen["hp"], n_embd=1280, n_ff=3420, n_layer=32, n_head=16, image_size=560, patch_size=14,
                proj_dim=2048, n_wa_pattern=8),
        std=dict(qwen["std"], attn=0.03, ffn=0.03, mm0=0.02, mm1=0.02))
else:
    import mkarch_vision as tool
    g = tool.PRESETS["tinygemma3v"]
    q = tool.PRESETS["tinyqwen2vl"]
    tool.PRESETS["gemma3-w2560"] = dict(g, hp=dict(g["hp"], n_embd=2560))
    tool.PRESETS["qwen2vl-w2048"] = dict(q, hp=dict(q["hp"], n_embd=2048, n_head=16, n_head_kv=2, head_dim=128,
                                                rope_sections=[16, 24, 24, 0]))   # llama.cpp: head = n_embd / n_head
    tool.DEFAULT_VOCAB = os.path.join(tools, "..", "models", "stories260K.gguf")

tool.main()
