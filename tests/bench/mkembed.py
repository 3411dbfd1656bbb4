#!/usr/bin/env python3
"""mkembed.py - synthetic embedding models with REAL shapes, for the throughput comparison with
llama-server --embedding (docs/performance.md). Random weights: the outputs mean nothing, the work per token
is that of the real model.

  PYTHONPATH=<llama.cpp>/gguf-py python3 tests/bench/mkembed.py SHAPE OUT.gguf --llama-cpp <llama.cpp>

SHAPE: bge-small (bge-small-en-v1.5: bert, 384 wide, 12 layers, 12 heads, FFN 1536, 512 positions, MEAN... as
       the converter writes CLS for bge; the pooling does not change the cost),
       minilm (all-MiniLM-L6-v2: the same with 6 layers),
       nomic (nomic-embed-text-v1.5: nomic-bert, 768 wide, 12 layers, 12 heads, SwiGLU FFN 3072, rope base 1000,
       2048 positions).
It reuses ../shared/tools/mkencoder.py (the generator of the test fixtures) with the preset's shapes replaced;
tensors are F32 except token_embd (F16), as the fixtures are.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("LLM_SHARED_TOOLS", os.path.join(HERE, "..", "..", "..", "shared", "tools"))
sys.path.insert(0, SHARED)
sys.argv_saved = list(sys.argv)
import mkencoder  # noqa: E402

SHAPES = {
    "bge-small": ("tinybert-mean", dict(n_embd=384, n_layer=12, n_head=12, n_ff=1536, ctx=512)),
    "minilm": ("tinybert-mean", dict(n_embd=384, n_layer=6, n_head=12, n_ff=1536, ctx=512)),
    "nomic": ("tinynomic", dict(n_embd=768, n_layer=12, n_head=12, n_ff=3072, ctx=2048)),
}

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("shape", choices=sorted(SHAPES))
ap.add_argument("out")
ap.add_argument("--llama-cpp", default=os.environ.get("LLAMA_CPP"), required=False)
a = ap.parse_args()
preset, hp = SHAPES[a.shape]
p = dict(mkencoder.PRESETS[preset])
p["hp"] = dict(p["hp"], **hp)
# keep the random draws O(1) whatever the width: the scales of the fixtures, divided by sqrt(width / 32)
scale = (hp["n_embd"] / 32) ** 0.5
p["std"] = {k: (v / scale if k in ("attn", "ffn") else v) for k, v in p["std"].items()}
mkencoder.PRESETS[a.shape] = p
sys.argv = [sys.argv[0], a.shape, a.out] + (["--llama-cpp", a.llama_cpp] if a.llama_cpp else [])
mkencoder.main()
