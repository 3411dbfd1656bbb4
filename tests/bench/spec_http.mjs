#!/usr/bin/env node
// spec_http.mjs - decode speed of one streamed greedy completion against
// any OpenAI-compatible server (llm-fcgi behind nginx, llama-server), for
// comparing speculative decoding side by side (tests/bench/spec_vs_llamacpp.sh).
//   node spec_http.mjs URL PROMPT_FILE N_TOKENS [REPS]
// Sends {prompt, max_tokens: N, temperature: 0, ignore_eos: true, stream}
// to URL/v1/completions REPS times (default 3) and prints one JSON line per
// run: {"tokens", "ttft_ms", "decode_tps"} where decode_tps counts the
// tokens after the first over the time from the first text to the end.
// Only loopback URLs; only Node's built-in modules.
import fs from 'node:fs';

const [url, promptFile, nStr, repStr] = process.argv.slice(2);
if (!url || !promptFile || !nStr) {
  console.error('usage: node spec_http.mjs URL PROMPT_FILE N_TOKENS [REPS]');
  process.exit(2);
}
const host = new URL(url).hostname;
if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
  console.error('spec_http: loopback URLs only');
  process.exit(2);
}
const prompt = fs.readFileSync(promptFile, 'utf8');
const n = Number(nStr), reps = Number(repStr || 3);
for (let r = 0; r < reps; r++) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${process.env.API_KEY || 'none'}` },
    body: JSON.stringify({ prompt, max_tokens: n, temperature: 0, ignore_eos: true, stream: true }),
    signal: AbortSignal.timeout(900000),
  });
  if (!res.ok) {
    console.error(`spec_http: HTTP ${res.status}: ${await res.text()}`);
    process.exit(1);
  }
  let first = 0, chunks = 0, buf = '';
  const dec = new TextDecoder();
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      const text = j.choices?.[0]?.text;
      if (text) {
        chunks++;
        if (!first) first = performance.now();
      }
    }
  }
  const end = performance.now();
  console.log(JSON.stringify({ tokens: n, chunks, ttft_ms: Math.round(first - t0), decode_tps: (n - 1) / ((end - first) / 1000) }));
}
