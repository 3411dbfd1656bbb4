#!/usr/bin/env python3
"""mklong_golden.py - llama.cpp's greedy output on one long prompt (issue 30).

    mklong_golden.py --server LLAMA_SERVER --model M.gguf --out OUT.jsonl [--n-prompt 3000] [--n-predict 16]
                     [--port 8097] [-- EXTRA llama-server ARGS...]

Starts llama-server (-t 2 -c N -np 1 plus EXTRA, e.g. -fa off, -ctk q8_0 -ctv q8_0), sends one
/completion whose prompt is a list of token ids (BOS, then n_prompt - 1 ids drawn from 3..n_vocab-1 by a
fixed xorshift, so no tokenizer is involved), greedy, n_probs 5, and writes one record in the format of
golden/README.md section 1 (prompt_tokens, completion_tokens, top_probs) plus "server_args". The
server is stopped by PID. The request is sent twice; the two answers must be identical.
"""
import argparse, json, os, signal, subprocess, sys, time, urllib.error, urllib.request


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        sys.exit(f"{path}: HTTP {e.code}: {e.read()[:400]!r}")


def prompt_ids(n, n_vocab, seed=0x2545F4914F6CDD1D):
    x, ids = seed, [1]
    while len(ids) < n:
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        ids.append(3 + x % (n_vocab - 3))
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-prompt", type=int, default=3000)
    ap.add_argument("--n-predict", type=int, default=16)
    ap.add_argument("--n-vocab", type=int, default=512)
    ap.add_argument("--port", type=int, default=8097)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    ctx = a.n_prompt + a.n_predict + 64
    args = [a.server, "-m", a.model, "-t", "2", "-c", str(ctx), "-np", "1", "--host", "127.0.0.1",
            "--port", str(a.port)] + a.extra
    srv = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{a.port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:
                time.sleep(0.5)
        ids = prompt_ids(a.n_prompt, a.n_vocab)
        body = {"prompt": ids, "n_predict": a.n_predict, "temperature": 0, "top_k": 1, "top_p": 1.0, "min_p": 0.0,
                "repeat_penalty": 1.0, "cache_prompt": False, "n_probs": 5, "post_sampling_probs": False,
                "return_tokens": True}
        r1, r2 = post(a.port, "/completion", body), post(a.port, "/completion", body)
        strip = lambda r: (r["tokens"], r["completion_probabilities"])
        if strip(r1) != strip(r2):
            sys.exit("the two answers differ")
        tops = [[{"id": t["id"], "logprob": t["logprob"]} for t in p["top_logprobs"]]
                for p in r1["completion_probabilities"]]
        rec = {"model": os.path.basename(a.model), "server_args": args[3:], "prompt_tokens": ids,
               "completion_tokens": r1["tokens"], "top_probs": tops,
               "tokens_evaluated": r1.get("tokens_evaluated")}
        with open(a.out, "w") as f:
            f.write(json.dumps(rec) + "\n")
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait()


if __name__ == "__main__":
    main()
