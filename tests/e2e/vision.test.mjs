// vision.test.mjs - images through the server, with the official openai
// client: llama.cpp's greedy goldens of one vision pair (golden/vision/
// vision-<PAIR>.jsonl) sent as chat messages whose content parts are the
// golden prompt's text and its images as base64 data: URLs (the server runs
// with tests/e2e/vision_template.jinja, a raw template, so the rendered
// prompt is the golden's). Checks every record's tokens (logprobs bytes) up
// to the first golden step whose top1-top2 gap is below GAP, and
// usage.prompt_tokens = the golden's tokens_evaluated. Then: /invocations
// with SageMaker LMI's chat example, TGI markdown images, a follow-up turn
// served from the image cache, /metrics. Emits TAP.
import fs from 'node:fs';
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const GOLDEN = process.env.GOLDEN_DIR;
const PAIR = process.env.PAIR;
const GAP = Number(process.env.GAP || 0.02);
const LIMIT = Number(process.env.LIMIT || 0); // records (0: all)
const { ok, failed } = harness({ detailChars: 400 });

const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: 'none', timeout: 120000, maxRetries: 0 });
const img = (f) => fs.readFileSync(`${GOLDEN}/vision/images/${f}`);
const mime = (f) => (f.endsWith('.png') ? 'image/png' : f.endsWith('.webp') ? 'image/webp' : 'image/jpeg');
const dataUrl = (f) => `data:${mime(f)};base64,${img(f).toString('base64')}`;

// the golden prompt as content parts: text around <__media__>, images in order
function parts(rec) {
  const pieces = rec.prompt.split('<__media__>');
  const out = [];
  pieces.forEach((t, i) => {
    if (t) out.push({ type: 'text', text: t });
    if (i < rec.images.length) out.push({ type: 'image_url', image_url: { url: dataUrl(rec.images[i]), detail: 'auto' } });
  });
  return out;
}

const recs = fs.readFileSync(`${GOLDEN}/vision/vision-${PAIR}.jsonl`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const todo = LIMIT ? recs.slice(0, LIMIT) : recs;
for (const [k, rec] of todo.entries()) {
  const want = rec.completion_tokens;
  const r = await client.chat.completions.create({
    model: PAIR, messages: [{ role: 'user', content: parts(rec) }], temperature: 0, max_tokens: want.length,
    logprobs: true, top_logprobs: 1,
  });
  const got = r.choices[0].logprobs.content.map((e) => e.bytes);
  let trusted = want.length;
  for (let s = 0; s < want.length; s++) {
    const t = rec.top_probs[s];
    if (t[0].logprob - t[1].logprob < GAP) { trusted = s; break; }
  }
  // llama-server gives the end token no bytes; this server its text
  const eos = r.choices[0].finish_reason === 'stop' ? got.length - 1 : -1;
  let first = -1;
  for (let s = 0; s < Math.min(trusted + 1, want.length); s++) {
    const wb = rec.top_probs[s][0].bytes;
    const same = got[s] && (JSON.stringify(got[s]) === JSON.stringify(wb) || (wb.length === 0 && s === eos));
    if (!same) { first = s; break; }
  }
  ok(first < 0 || first >= trusted, `${PAIR} #${k + 1} (${rec.images.join(', ')}): chat tokens as llama.cpp's up to step ${trusted}`,
    { first, got: got.slice(0, 6), want: rec.top_probs.slice(0, 6).map((t) => t[0].bytes) });
  ok(r.usage.prompt_tokens === rec.tokens_evaluated, `${PAIR} #${k + 1}: usage.prompt_tokens ${r.usage.prompt_tokens} counts the image tokens (${rec.tokens_evaluated})`);
}

// SageMaker LMI's chat example (its schema, verbatim shape) on /invocations
{
  const rec = recs[0];
  const body = {
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this image about?' },
      { type: 'image_url', image_url: { url: img(rec.images[0]).toString('base64') } }] }],
    temperature: 0.9, top_p: 0.6, max_tokens: 8,
  };
  const res = await fetch(`${BASE}/invocations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await res.json();
  ok(res.status === 200 && j.choices && j.choices[0].message && j.usage.prompt_tokens > rec.images.length,
    '/invocations: LMI chat example with a bare base64 image', j);
}

// TGI: markdown images in `inputs`
{
  const rec = recs[0];
  const inputs = rec.prompt.replace('<__media__>', `![](${dataUrl(rec.images[0])})`);
  const res = await fetch(`${BASE}/generate`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs, parameters: { max_new_tokens: 4, details: true, decoder_input_details: false } }) });
  const j = await res.json();
  const want = rec.top_probs.slice(0, 4).map((t) => t[0].id);
  const got = (j.details?.tokens || []).map((t) => t.id);
  ok(res.status === 200 && JSON.stringify(got) === JSON.stringify(want.slice(0, got.length)) && got.length > 0,
    'TGI /generate with a markdown image: the golden tokens', { status: res.status, got, want, j });
}

// a follow-up turn about the same image: nothing is encoded again (the
// prefix cache holds the image's rows; the image cache its encoding)
{
  const rec = recs[0];
  const metric = async (name) => {
    const t = await (await fetch(`${BASE}/metrics`)).text();
    return Number((t.match(new RegExp(`^${name}\\{[^}]*\\} (\\d+)`, 'm')) || [0, -1])[1]);
  };
  const msgs = [{ role: 'user', content: parts(rec) }];
  const a = await client.chat.completions.create({ model: PAIR, messages: msgs, temperature: 0, max_tokens: 4 });
  const s0 = await metric('llm_image_encode_stages_total');
  msgs.push({ role: 'assistant', content: a.choices[0].message.content }, { role: 'user', content: 'And then?' });
  const b = await client.chat.completions.create({ model: PAIR, messages: msgs, temperature: 0, max_tokens: 4 });
  const s1 = await metric('llm_image_encode_stages_total');
  const imageEnd = rec.tokens_evaluated - rec.prompt_chunks[rec.prompt_chunks.length - 1].tokens.length;
  ok(s1 === s0 && b.usage.prompt_tokens_details.cached_tokens >= Math.floor(imageEnd / 16) * 16,
    'a follow-up turn encodes nothing and reuses the prompt with its image from the prefix cache',
    { s0, s1, cached: b.usage.prompt_tokens_details, imageEnd });
  // the same image after other text: not a prefix, but the encoding is cached
  const h0 = await metric('llm_image_cache_hits_total');
  const c = await client.chat.completions.create({ model: PAIR, temperature: 0, max_tokens: 2, messages: [
    { role: 'user', content: [{ type: 'text', text: 'Another look at ' }, parts(rec).find((p) => p.type === 'image_url')] }] });
  const h1 = await metric('llm_image_cache_hits_total');
  const s2 = await metric('llm_image_encode_stages_total');
  ok(c.choices.length === 1 && h1 > h0 && s2 === s1, 'the same image in another prompt comes from the image cache',
    { h0, h1, s1, s2 });
  const t = await (await fetch(`${BASE}/metrics`)).text();
  ok(/^llm_image_cache_bytes\{[^}]*\} [1-9]/m.test(t) && /^llm_image_cache_entries\{[^}]*\} [1-9]/m.test(t),
    '/metrics shows the image cache');
}

process.exit(failed() ? 1 : 0);
