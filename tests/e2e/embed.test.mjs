// embed.test.mjs - embeddings and reranking through nginx (serve_embed.sh).
// SUITE=embed: an embedding server (tinybert-mean); SUITE=rerank: a rerank
// server (tinybert-rerank or tinyqwen3-rerank, MODEL_FILE); the answers are
// compared with llama.cpp's goldens (LLM_GOLDEN_DIR/embed) where they exist.
import fs from 'node:fs';
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const SUITE = process.env.SUITE;
const MODEL = process.env.MODEL || 'model';
const GOLDEN = `${process.env.LLM_GOLDEN_DIR}/embed`;
const h = harness({ prefix: `[${SUITE}] `, timeoutMs: 120000 });
const client = new OpenAI({ baseURL: `${process.env.BASE}/v1`, apiKey: process.env.API_KEY || 'none' });

const jsonl = (f) => fs.readFileSync(`${GOLDEN}/${f}`, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const maxAbs = (a, b) => (a.length !== b.length ? Infinity : Math.max(...a.map((x, i) => Math.abs(x - b[i]))));
const l2 = (v) => { const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)); return v.map((x) => x / n); };
const f32 = (b64) => { const b = Buffer.from(b64, 'base64'); return Array.from(new Float32Array(b.buffer, b.byteOffset, b.length / 4)); };

async function embedSuite() {
  const gold = jsonl('embed-tinybert-mean-f32.jsonl');
  await h.check('openai embeddings.create (float) matches the goldens', async () => {
    const r = await client.embeddings.create({ model: MODEL, input: gold.map((g) => g.input), encoding_format: 'float' });
    h.ok(r.object === 'list' && r.data.length === gold.length, 'a list with one item per input', r);
    const d = Math.max(...r.data.map((e, i) => maxAbs(e.embedding, gold[i].embedding_l2)));
    h.ok(d <= 1e-4, `every vector within 1e-4 of llama.cpp's (max ${d.toExponential(2)})`);
    const tokens = gold.reduce((s, g) => s + g.n_tokens, 0);
    h.ok(r.usage.prompt_tokens === tokens && r.usage.total_tokens === tokens, `usage counts the tokens (${tokens})`, r.usage);
    h.ok(r.data.every((e, i) => e.index === i && e.object === 'embedding'), 'indexes in order');
  });
  await h.check('openai embeddings.create (base64)', async () => {
    const raw = await client.embeddings.create({ model: MODEL, input: gold[0].input, encoding_format: 'base64' });
    const v = f32(raw.data[0].embedding);
    h.ok(maxAbs(v, gold[0].embedding_l2) <= 1e-4, 'base64 decodes to the golden float32 vector');
    const auto = await client.embeddings.create({ model: MODEL, input: gold[0].input });
    h.ok(Array.isArray(auto.data[0].embedding) && maxAbs(auto.data[0].embedding, gold[0].embedding_l2) <= 1e-4,
      'the SDK default (base64 on the wire, decoded by the SDK) gives the same vector');
  });
  await h.check('dimensions (Matryoshka)', async () => {
    const r = await client.embeddings.create({ model: MODEL, input: gold[1].input, dimensions: 8 });
    const want = l2(gold[1].embedding.slice(0, 8));
    h.ok(r.data[0].embedding.length === 8 && maxAbs(r.data[0].embedding, want) <= 1e-4,
      'the first 8 dimensions, normalised again', r.data[0].embedding);
  });
  await h.check('token id inputs', async () => {
    const r = await client.embeddings.create({ model: MODEL, input: [gold[0].tokens, gold[1].tokens] });
    h.ok(maxAbs(r.data[0].embedding, gold[0].embedding_l2) <= 1e-4 && maxAbs(r.data[1].embedding, gold[1].embedding_l2) <= 1e-4,
      'arrays of token ids give the same vectors as the texts');
  });
  await h.check('the llama-server api-embed goldens of this server', async () => {
    const api = jsonl('api-embed.jsonl').filter((x) => x.model === 'tinybert-mean-f32.gguf' &&
      x.server_args.length === 1 && x.status === 200 && x.endpoint !== '/tokenize');
    for (const x of api) {
      const r = await h.post(x.endpoint, x.request);
      const want = x.response;
      let ok = r.status === 200;
      if (ok && Array.isArray(want)) {
        ok = Array.isArray(r.json) && r.json.length === want.length &&
          want.every((w, i) => maxAbs(r.json[i].embedding.flat(), w.embedding.flat()) <= 1e-4);
      } else if (ok) {
        ok = r.json.data.length === want.data.length && r.json.usage.prompt_tokens === want.usage.prompt_tokens &&
          r.json.model === want.model &&
          want.data.every((w, i) => (typeof w.embedding === 'string'
            ? maxAbs(f32(r.json.data[i].embedding), f32(w.embedding)) <= 1e-4
            : maxAbs(r.json.data[i].embedding, w.embedding) <= 1e-4));
      }
      h.ok(ok, `${x.endpoint} ${JSON.stringify(x.request).slice(0, 60)}: as llama-server`, r.text.slice(0, 300));
    }
  });
  await h.check('many concurrent requests share forward passes and give the same vectors', async () => {
    const reqs = Array.from({ length: 16 }, (_, k) => gold.map((g, i) => gold[(i + k) % gold.length].input));
    const rs = await Promise.all(reqs.map((input) => client.embeddings.create({ model: MODEL, input, encoding_format: 'float' })));
    let d = 0;
    rs.forEach((r, k) => r.data.forEach((e, i) => { d = Math.max(d, maxAbs(e.embedding, gold[(i + k) % gold.length].embedding_l2)); }));
    h.ok(d <= 1e-4, `16 x ${gold.length} inputs at once: max diff ${d.toExponential(2)}`);
  });
  await h.check('errors are 400s in OpenAI\'s format', async () => {
    for (const [body, what] of [[{ input: [] }, 'an empty array'], [{ input: [[]] }, 'an empty id array'],
      [{}, 'no input'], [{ input: 5.5 }, 'a number'], [{ input: [999999] }, 'an id outside the vocabulary'],
      [{ input: 'x', encoding_format: 'int8' }, 'a bad encoding_format'], [{ input: 'x', dimensions: 33 }, 'dimensions above the model\'s'],
      [{ input: 'word '.repeat(600) }, 'an input longer than 512 tokens']]) {
      const r = await h.post('/v1/embeddings', body);
      h.ok(r.status === 400 && r.json && r.json.error && typeof r.json.error.message === 'string',
        `${what}: 400 ${r.json && r.json.error && r.json.error.message}`, r.text);
    }
    const long = await h.post('/v1/embeddings', { input: 'word '.repeat(600) });
    h.ok(/602 tokens/.test(long.text) && /512/.test(long.text), 'the long input\'s error states its length and the limit', long.text);
    try {
      await client.embeddings.create({ model: MODEL, input: [] });
      h.ok(false, 'the SDK raises on a 400');
    } catch (e) {
      h.ok(e.status === 400, `the SDK raises BadRequestError (${e.status})`);
    }
  });
}

async function rerankSuite() {
  const name = process.env.MODEL_FILE.split('/').pop().replace('.gguf', '');
  const http = jsonl(`rerank-${name}-http.jsonl`);
  for (const x of http) {
    const r = await h.post(x.endpoint, x.request);
    const want = x.response;
    const got = Array.isArray(want) ? r.json : r.json && r.json.results;
    const exp = Array.isArray(want) ? want : want.results;
    const label = Array.isArray(want) ? 'score' : 'relevance_score';
    const ok = r.status === 200 && Array.isArray(got) && got.length === exp.length &&
      exp.every((w, i) => got[i].index === w.index && Math.abs(got[i][label] - w[label]) <= 1e-3 &&
        (w.text === undefined || got[i].text === w.text)) &&
      (Array.isArray(want) || (r.json.usage.prompt_tokens === want.usage.prompt_tokens && r.json.object === 'list'));
    h.ok(ok, `${x.endpoint} ${JSON.stringify(x.request).slice(0, 70)}: llama-server's order and scores`, r.text.slice(0, 400));
  }
  const q = http[0].request.query, docs = http[0].request.documents || http[0].request.texts;
  for (const path of ['/rerank', '/v1/rerank', '/v2/rerank']) {
    const r = await h.post(path, { query: q, documents: docs.map((t) => ({ text: t })), top_n: 1, return_documents: true });
    h.ok(r.status === 200 && r.json.results.length === 1 && typeof r.json.results[0].document.text === 'string',
      `${path}: documents as {text}, top_n, return_documents`, r.text);
  }
  const s = await h.post('/score', { text_1: q, text_2: docs });
  const one = await h.post('/v1/rerank', { query: q, documents: docs });
  const byIndex = new Map(one.json.results.map((x) => [x.index, x.relevance_score]));
  h.ok(s.status === 200 && s.json.data.length === docs.length && s.json.data.every((d, i) => d.index === i &&
    Math.abs(d.score - byIndex.get(i)) <= 1e-6), '/score (one to many) gives the rerank scores in input order', s.text);
  const tei = await h.post('/invocations', { query: q, texts: docs, return_text: true });
  h.ok(tei.status === 200 && Array.isArray(tei.json) && typeof tei.json[0].text === 'string', '/invocations: TEI rerank', tei.text);
  for (const [body, what] of [[{ query: q }, 'no documents'], [{ query: q, documents: [] }, 'empty documents'],
    [{ query: 5, documents: ['a'] }, 'a non-string query'], [{ documents: ['a'] }, 'no query']]) {
    const r = await h.post('/v1/rerank', body);
    h.ok(r.status === 400 && r.json.error && r.json.error.message, `${what}: 400 (${r.json && r.json.error && r.json.error.message})`, r.text);
  }
  const t = await h.post('/rerank', { query: q, texts: [] });
  h.ok(t.status === 400 && typeof t.json.error === 'string' && t.json.error_type === 'validation', 'TEI shape: its error format', t.text);
  const e = await h.post('/v1/embeddings', { input: 'x' });
  h.ok(e.status === 404 && /reranking/.test(e.json.error.message), 'embeddings on a rerank server: 404 naming what it serves', e.text);
}

if (SUITE === 'embed') await embedSuite();
else await rerankSuite();
process.exit(h.failed() ? 1 : 0);
