#!/usr/bin/env python3
"""long_spread.py - how far llama.cpp's own configurations are from each other on a long-prompt golden.

    long_spread.py LLAMA_SERVER MODEL.gguf GOLDEN-faoff.jsonl [EXTRA llama-server ARGS...]

Teacher-forced along the golden's path: for every step, the prompt plus the golden tokens so far are
sent to llama-server (started with -t 2 -c N -np 1 and EXTRA, e.g. -fa on, or -fa on -ctk q8_0 -ctv q8_0)
with n_predict 1 and n_probs 20; prints the median, p95 and largest |logprob difference| over the golden's
top-5 entries. This is the spread the long-context bars of tests/golden/test_greedy.c come from
(tests/fixtures/long-context/README.md).
"""
import json, signal, subprocess, sys, time, urllib.request


def main():
    server, model, golden, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    g = json.loads(open(golden).read())
    port = 8098
    ctx = len(g["prompt_tokens"]) + len(g["completion_tokens"]) + 64
    p = subprocess.Popen([server, "-m", model, "-t", "2", "-c", str(ctx), "-np", "1", "--port", str(port)] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        diffs = []
        for s in range(len(g["completion_tokens"])):
            body = {"prompt": g["prompt_tokens"] + g["completion_tokens"][:s], "n_predict": 1, "temperature": 0,
                    "top_k": 1, "n_probs": 20, "cache_prompt": False, "post_sampling_probs": False}
            req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            r = json.loads(urllib.request.urlopen(req, timeout=600).read())
            lp = {t["id"]: t["logprob"] for t in r["completion_probabilities"][0]["top_logprobs"]}
            diffs += [abs(lp[t["id"]] - t["logprob"]) for t in g["top_probs"][s] if t["id"] in lp]
        diffs.sort()
        n = len(diffs)
        print("median %.4f p95 %.4f max %.4f (%d values)" % (diffs[n // 2], diffs[int(0.95 * (n - 1) + 0.5)],
                                                              diffs[-1], n))
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait()


if __name__ == "__main__":
    main()
