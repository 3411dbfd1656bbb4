// embed_bench.mjs - embedding throughput and latency of an OpenAI-style
// /v1/embeddings server (llm-fcgi behind nginx, or llama-server --embedding):
// N inputs of 20-200 words sent as C concurrent requests of B inputs, then
// the latency of one short query (median of R sequential requests).
//   node tests/bench/embed_bench.mjs URL [N=1000] [C=16] [B=64] [R=20]
// Prints one JSON line: {inputs, seconds, inputs_per_s, tokens, latency_ms_p50, latency_ms_min}.
const [url, N = 1000, C = 16, B = 64, R = 20] = process.argv.slice(2).map((x, i) => (i ? Number(x) : x));
const words = ('the of and to in is was for on that with as by at from it an be this which or are has had not but ' +
  'were his her they their one all new more also first two after been other time most people city year years used ' +
  'world state school film music game water house system family group company number country police team history ' +
  'season data model server engine memory network search query document answer language text question computer ' +
  'science paper research study result method analysis value table report market price').split(' ');
let seed = 25;
const rnd = () => { /* xorshift32: the same texts on every run */
  seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296;
};
const texts = Array.from({ length: N }, () => Array.from({ length: 18 + Math.floor(rnd() * 181) },
  () => words[Math.floor(rnd() * words.length)]).join(' '));
import http from 'node:http';
// node:http, not fetch: a request queued behind others may wait minutes
// on a slow machine, past fetch's fixed header timeout
const agent = new http.Agent({ keepAlive: false, maxSockets: 64 });
function post(input) {
  const body = JSON.stringify({ input, model: 'm' });
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'Content-Type': 'application/json',
      Authorization: 'Bearer none', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => {
        try {
          const j = JSON.parse(Buffer.concat(parts).toString());
          if (res.statusCode !== 200 || !j.data) reject(new Error(`HTTP ${res.statusCode}: ${JSON.stringify(j).slice(0, 200)}`));
          else resolve(j);
        } catch (e) { reject(e); }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
await post(['warm up']);
const chunks = [];
for (let i = 0; i < N; i += B) chunks.push(texts.slice(i, i + B));
let tokens = 0, next = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: C }, async () => {
  while (next < chunks.length) {
    const c = chunks[next++];
    const used = (await post(c)).usage.prompt_tokens; /* not `tokens += await ...`: that reads tokens first */
    tokens += used;
  }
}));
const secs = (performance.now() - t0) / 1000;
const lat = [];
for (let i = 0; i < R; i++) { const s = performance.now(); await post('what is the capital of france?'); lat.push(performance.now() - s); }
lat.sort((a, b) => a - b);
console.log(JSON.stringify({ inputs: N, seconds: +secs.toFixed(2), inputs_per_s: +(N / secs).toFixed(1), tokens,
  latency_ms_p50: +lat[Math.floor(R / 2)].toFixed(1), latency_ms_min: +lat[0].toFixed(1) }));
