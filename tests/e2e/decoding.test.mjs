// decoding.test.mjs - every decoding control through nginx with the REAL
// engine on stories260K.gguf (issue 4): sampling, stop, logprobs (against
// the engine's golden top-5), n, echo, prompt_logprobs, MindIE extras,
// rejections. Each option streamed and not. One TAP line per check (no
// plan: the .sh wrapper counts). Environment: BASE, API_KEY, MODEL, GOLDEN
// (path of greedy-stories260K.jsonl). The server runs with --temperature 0
// (a server default), --max-n 4 and --mindie-extras.
import OpenAI from 'openai';
import { harness } from './harness.mjs';
import { readFileSync } from 'node:fs';

const BASE = process.env.BASE;
const KEY = process.env.API_KEY || 'none';
const MODEL = process.env.MODEL;
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 60000, maxRetries: 0 });

const { ok, check, post, failed } = harness({ timeoutMs: 60000 });
function sse(text) {
  const data = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  return { done: data[data.length - 1] === '[DONE]', chunks: data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)) };
}
const P = 'Once upon a time';
const cmpl = (extra = {}) => ({ model: MODEL, prompt: P, max_tokens: 12, temperature: 0, ...extra });
const chat = (extra = {}) => ({ model: MODEL, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 12, temperature: 0, ...extra });
// streamed completion via the SDK: { text per index, finish, stop_reason, chunks }
async function streamCmpl(body) {
  const s = await client.completions.create({ ...body, stream: true });
  const out = { text: {}, finish: {}, stop: {}, chunks: [] };
  for await (const ch of s) {
    out.chunks.push(ch);
    for (const c of ch.choices) {
      out.text[c.index] = (out.text[c.index] || '') + c.text;
      if (c.finish_reason) { out.finish[c.index] = c.finish_reason; out.stop[c.index] = c.stop_reason; }
    }
  }
  return out;
}
async function streamChat(body) {
  const s = await client.chat.completions.create({ ...body, stream: true });
  const out = { text: {}, finish: {}, stop: {}, lp: {}, chunks: [] };
  for await (const ch of s) {
    out.chunks.push(ch);
    for (const c of ch.choices) {
      out.text[c.index] = (out.text[c.index] || '') + (c.delta.content || '');
      if (c.logprobs && c.logprobs.content) out.lp[c.index] = (out.lp[c.index] || []).concat(c.logprobs.content);
      if (c.finish_reason) { out.finish[c.index] = c.finish_reason; out.stop[c.index] = c.stop_reason; }
    }
  }
  return out;
}

const greedy = (await client.completions.create(cmpl({ max_tokens: 20 }))).choices[0].text;
ok(greedy.startsWith(', there was a little g'), 'greedy reference text', greedy);

// ---- logprobs against the golden top-5 (llama.cpp) ----
const golden = readFileSync(process.env.GOLDEN, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
await check('golden logprobs', async () => {
  let worst = 0, steps = 0, tokOk = true;
  for (const g of golden) {
    const n = g.first_near_tie_step != null ? Math.min(g.first_near_tie_step, 16) : 16;
    if (n < 1) continue;
    const r = await client.completions.create({ model: MODEL, prompt: g.prompt_tokens, max_tokens: n, temperature: 0, logprobs: 5 });
    const lp = r.choices[0].logprobs;
    for (let i = 0; i < n; i++) {
      const want = g.top_probs[i];
      if (lp.tokens[i] !== want[0].token) tokOk = false;
      worst = Math.max(worst, Math.abs(lp.token_logprobs[i] - want[0].logprob));
      const got = Object.values(lp.top_logprobs[i]).sort((a, b) => b - a);
      for (let k = 0; k < Math.min(5, want.length, got.length); k++) worst = Math.max(worst, Math.abs(got[k] - want[k].logprob));
      steps++;
    }
  }
  ok(tokOk && steps > 0, `golden: greedy tokens equal llama.cpp's (${steps} steps)`);
  ok(worst < 2e-3, `golden: logprobs and top-5 within 2e-3 (max diff ${worst.toExponential(2)})`, worst);
  // the same through a stream
  const g = golden[0];
  const s = await streamCmpl({ model: MODEL, prompt: g.prompt_tokens, max_tokens: 8, temperature: 0, logprobs: 5 });
  const lps = s.chunks.flatMap((c) => c.choices.filter((x) => x.logprobs).flatMap((x) => x.logprobs.token_logprobs));
  ok(lps.length === 8 && lps.every((v, i) => Math.abs(v - g.top_probs[i][0].logprob) < 2e-3), 'golden: streamed logprobs agree', lps);
});

// ---- chat logprobs: the OpenAI shape ----
await check('chat logprobs', async () => {
  const r = await client.chat.completions.create(chat({ logprobs: true, top_logprobs: 20 }));
  const c = r.choices[0].logprobs.content;
  ok(Array.isArray(c) && c.length === r.usage.completion_tokens, 'chat logprobs: one entry per token', c && c.length);
  const e = c[0];
  ok(typeof e.token === 'string' && typeof e.logprob === 'number' && e.logprob <= 0 && Array.isArray(e.bytes) &&
    Buffer.from(e.bytes).toString('utf8') === e.token, 'chat logprobs: token, logprob, bytes', e);
  ok(e.top_logprobs.length === 20 && e.top_logprobs[0].token === e.token && e.top_logprobs[0].logprob === e.logprob &&
    e.top_logprobs.every((t, i) => i === 0 || t.logprob <= e.top_logprobs[i - 1].logprob) &&
    e.top_logprobs.every((t) => Object.keys(t).sort().join() === 'bytes,logprob,token'),
  'chat logprobs: 20 alternatives best first, {token, logprob, bytes}', e.top_logprobs.slice(0, 3));
  ok(c.map((x) => x.token).join('') === r.choices[0].message.content, 'chat logprobs: tokens spell the content');
  const s = await streamChat(chat({ logprobs: true, top_logprobs: 2 }));
  ok(s.lp[0] && s.lp[0].length === c.length && s.lp[0].every((x, i) => x.token === c[i].token && Math.abs(x.logprob - c[i].logprob) < 1e-6 && x.top_logprobs.length === 2),
    'chat logprobs streamed: per chunk, same values', s.lp[0] && s.lp[0].slice(0, 2));
  const n = await client.chat.completions.create(chat({ logprobs: true }));
  ok(n.choices[0].logprobs.content[0].top_logprobs.length === 0, 'chat logprobs without top_logprobs: empty alternatives');
  const none = await client.chat.completions.create(chat());
  ok(none.choices[0].logprobs === null, 'chat: logprobs null unless asked');
});

// ---- completions legacy logprobs + echo ----
await check('completions logprobs and echo', async () => {
  const r = await client.completions.create(cmpl({ logprobs: 3 }));
  const l = r.choices[0].logprobs;
  ok(l.tokens.length === 12 && l.token_logprobs.length === 12 && l.top_logprobs.length === 12 && l.text_offset.length === 12,
    'legacy logprobs: tokens, token_logprobs, top_logprobs, text_offset', l);
  ok(l.top_logprobs.every((d) => Object.keys(d).length === 3), 'legacy logprobs: 3 alternatives per token');
  ok(l.text_offset.every((o, i) => r.choices[0].text.slice(o).startsWith(l.tokens[i])), 'legacy logprobs: text_offset points at each token');
  const e = await client.completions.create(cmpl({ echo: true, max_tokens: 4 }));
  ok(e.choices[0].text === P + greedy.slice(0, e.choices[0].text.length - P.length) && e.choices[0].text.length > P.length, 'echo: prompt prepended', e.choices[0].text);
  const el = await client.completions.create(cmpl({ echo: true, max_tokens: 4, logprobs: 1 }));
  const x = el.choices[0].logprobs;
  ok(x.token_logprobs[0] === null && x.top_logprobs[0] === null && x.tokens.length === 5 + 4 && x.token_logprobs.slice(1).every((v) => v <= 0),
    'echo + logprobs: prompt tokens included, the first null', x);
  ok(x.text_offset.slice(1).every((o, i) => o >= x.text_offset[i]) && x.text_offset[5] === P.length &&
    el.choices[0].text.slice(x.text_offset[2]).startsWith(' upon'), 'echo + logprobs: text_offset into the echoed text', x.text_offset);
  const s = await streamCmpl(cmpl({ echo: true, max_tokens: 4 }));
  ok(s.text[0] === e.choices[0].text, 'echo streamed: same text', s.text[0]);
});

// ---- prompt_logprobs (vLLM) ----
await check('prompt_logprobs', async () => {
  const r = await post('/v1/chat/completions', chat({ prompt_logprobs: 2 }));
  const p = r.json.prompt_logprobs;
  ok(Array.isArray(p) && p[0] === null && p.length === r.json.usage.prompt_tokens, 'chat prompt_logprobs: at the root, one per prompt token, first null', p && p.length);
  const d = p[1], ks = Object.keys(d);
  ok(ks.length >= 2 && ks.length <= 3 && ks.every((k) => /^\d+$/.test(k) && typeof d[k].logprob === 'number' && Number.isInteger(d[k].rank) && typeof d[k].decoded_token === 'string'),
    'chat prompt_logprobs: {id: {logprob, rank, decoded_token}}', d);
  const c = await post('/v1/completions', { model: MODEL, prompt: [1, 403, 407, 261, 378], max_tokens: 2, temperature: 0, prompt_logprobs: 0 });
  const q = c.json.choices[0].prompt_logprobs;
  ok(q && q.length === 5 && q[0] === null && q[1]['403'] && q[1]['403'].rank >= 1 && q[4]['378'], 'completions prompt_logprobs: per choice, the prompt token always listed', q);
  const s = await post('/v1/chat/completions', chat({ prompt_logprobs: 1, stream: true }));
  ok(s.status === 400 && s.json.error.param === 'prompt_logprobs', 'prompt_logprobs with stream -> 400');
});

// ---- sampling ----
await check('sampling', async () => {
  const dflt = await client.completions.create({ model: MODEL, prompt: P, max_tokens: 20 });
  ok(dflt.choices[0].text === greedy, 'server default --temperature 0 applies when the request has none', dflt.choices[0].text);
  const hot = cmpl({ temperature: 1, max_tokens: 20 });
  for (const [name, extra] of [['top_k 1', { top_k: 1 }], ['top_p 0.01', { top_p: 0.01 }], ['min_p 1', { min_p: 1 }]]) {
    const r = await client.completions.create({ ...hot, ...extra, seed: 11 });
    ok(r.choices[0].text === greedy, `${name} at temperature 1 keeps only the best token (= greedy)`, r.choices[0].text);
  }
  const a = await client.completions.create({ ...hot, seed: 1234 });
  const b = await client.completions.create({ ...hot, seed: 1234 });
  const c = await client.completions.create({ ...hot, seed: 99 });
  ok(a.choices[0].text === b.choices[0].text, 'seed: same request, same text', [a.choices[0].text, b.choices[0].text]);
  ok(a.choices[0].text !== c.choices[0].text, 'seed: another seed, another text');
  const s = await streamCmpl({ ...hot, seed: 1234 });
  ok(s.text[0] === a.choices[0].text, 'seed: streamed text equals non-streamed');
  // alongside three other streams
  const others = [1, 2, 3].map((i) => streamCmpl(cmpl({ temperature: 1, max_tokens: 40, seed: i, prompt: ['Lily', 'Tom', 'A cat'][i - 1] })));
  const [busy, busyS] = await Promise.all([client.completions.create({ ...hot, seed: 1234 }), streamCmpl({ ...hot, seed: 1234 }), ...others]);
  ok(busy.choices[0].text === a.choices[0].text && busyS.text[0] === a.choices[0].text,
    'seed: same text (streamed and not) alongside three other streams', [busy.choices[0].text, busyS.text[0]]);
  const long = (await client.completions.create(cmpl({ max_tokens: 48 }))).choices[0].text;
  ok(long === golden[0].completion_text, 'greedy 48 tokens equal the golden text', long);
  const pen = await client.completions.create(cmpl({ max_tokens: 48, frequency_penalty: 2, presence_penalty: 2 }));
  ok(pen.choices[0].text !== long && pen.choices[0].text.startsWith(', there was a little girl named Lily.'),
    'frequency/presence penalties change greedy output once tokens repeat', pen.choices[0].text);
  const ps = await streamCmpl(cmpl({ max_tokens: 48, frequency_penalty: 2, presence_penalty: 2 }));
  ok(ps.text[0] === pen.choices[0].text, 'penalties streamed: same text');
  const rep = await client.completions.create(cmpl({ max_tokens: 48, repetition_penalty: 1.8 }));
  ok(rep.choices[0].text !== long && rep.choices[0].text !== pen.choices[0].text, 'repetition_penalty changes greedy output', rep.choices[0].text);
  const ban = await client.completions.create(cmpl({ logprobs: 0, max_tokens: 3, logit_bias: { 432: -100 } }));
  ok(!ban.choices[0].text.startsWith(','), 'logit_bias -100 bans the greedy token', ban.choices[0].text);
  const force = await client.completions.create(cmpl({ max_tokens: 3, logit_bias: { 400: 100 }, logprobs: 0 }));
  const t = force.choices[0].logprobs.tokens;
  ok(t.length === 3 && t.every((x) => x === t[0]), 'logit_bias +100 forces a token', t);
  const fs = await streamCmpl(cmpl({ max_tokens: 3, logit_bias: { 400: 100 } }));
  ok(fs.text[0] === force.choices[0].text, 'logit_bias streamed: same text');
});

// ---- stopping ----
await check('stop strings', async () => {
  const idx = greedy.indexOf('little g');
  const r = await client.completions.create(cmpl({ max_tokens: 20, stop: ['little g'] }));
  ok(r.choices[0].text === greedy.slice(0, idx) && r.choices[0].finish_reason === 'stop' && r.choices[0].stop_reason === 'little g',
    'stop across tokens: text cut before it, stop_reason the string', r.choices[0]);
  const s = await streamCmpl(cmpl({ max_tokens: 20, stop: ['little g'] }));
  ok(s.text[0] === r.choices[0].text && s.finish[0] === 'stop' && s.stop[0] === 'little g', 'stop streamed: held back, same text and reason', s);
  const inc = await client.completions.create(cmpl({ max_tokens: 20, stop: 'little g', include_stop_str_in_output: true }));
  ok(inc.choices[0].text === greedy.slice(0, idx) + 'little g', 'include_stop_str_in_output', inc.choices[0].text);
  const many = await client.completions.create(cmpl({ max_tokens: 20, stop: ['zz1', 'zz2', 'zz3', 'zz4', 'zz5', ' was'] }));
  ok(many.choices[0].text === ', there' && many.choices[0].stop_reason === ' was', 'more than 4 stop strings', many.choices[0]);
  const first = await client.completions.create(cmpl({ stop: [','] }));
  ok(first.choices[0].text === '' && first.choices[0].finish_reason === 'stop' && first.usage.completion_tokens === 1, 'stop at the very first token', first);
  const minr = await client.completions.create(cmpl({ stop: [','], min_tokens: 3 }));
  ok(minr.choices[0].text.startsWith(', there') && minr.usage.completion_tokens >= 3, 'min_tokens suppresses stop strings until reached', minr.choices[0].text);
  const cs = await streamChat(chat({ max_tokens: 30, stop: ['.'] }));
  const cn = await client.chat.completions.create(chat({ max_tokens: 30, stop: ['.'] }));
  ok(cs.text[0] === cn.choices[0].message.content && cs.stop[0] === cn.choices[0].stop_reason, 'chat stop: streamed equals non-streamed', [cs.text[0], cn.choices[0]]);
});

await check('stop tokens, EOS, length', async () => {
  const r = await client.completions.create(cmpl({ max_tokens: 20, stop_token_ids: [261] }));
  ok(r.choices[0].text === ', there was' && r.choices[0].finish_reason === 'stop' && r.choices[0].stop_reason === 261 && r.usage.completion_tokens === 4,
    'stop_token_ids: stop_reason the id, its text not included, counted', r);
  const s = await streamCmpl(cmpl({ max_tokens: 20, stop_token_ids: [261] }));
  ok(s.text[0] === ', there was' && s.stop[0] === 261, 'stop_token_ids streamed', s);
  const inc = await client.completions.create(cmpl({ max_tokens: 20, stop_token_ids: [261], include_stop_str_in_output: true }));
  ok(inc.choices[0].text === ', there was a', 'stop_token_ids + include_stop_str_in_output keeps the token text', inc.choices[0].text);
  const eos = await client.completions.create(cmpl({ logit_bias: { 2: 100 } }));
  ok(eos.choices[0].text === '' && eos.choices[0].finish_reason === 'stop' && eos.choices[0].stop_reason === null && eos.usage.completion_tokens === 1,
    'EOS: finish stop, stop_reason null, counted as a completion token', eos);
  const me = await client.completions.create(cmpl({ logit_bias: { 2: 100 }, min_tokens: 3 }));
  ok(me.choices[0].finish_reason === 'stop' && me.usage.completion_tokens === 4, 'min_tokens bans EOS until reached (then EOS stops)', me);
  const mes = await streamCmpl(cmpl({ logit_bias: { 2: 100 }, min_tokens: 3 }));
  ok(mes.finish[0] === 'stop' && mes.text[0] === me.choices[0].text, 'min_tokens + EOS streamed');
  const ign = await client.completions.create(cmpl({ logit_bias: { 2: 100 }, ignore_eos: true, max_tokens: 5 }));
  ok(ign.choices[0].finish_reason === 'length' && ign.usage.completion_tokens === 5, 'ignore_eos: generates max_tokens', ign);
  const mt = await client.chat.completions.create(chat({ max_tokens: undefined, max_completion_tokens: 5 }));
  ok(mt.choices[0].finish_reason === 'length' && mt.usage.completion_tokens === 5, 'max_completion_tokens', mt.usage);
  const ctx = await client.completions.create({ model: MODEL, prompt: P, temperature: 0, ignore_eos: true });
  ok(ctx.choices[0].finish_reason === 'length' && ctx.usage.total_tokens === 512, 'context end -> length (512 tokens)', ctx.usage);
  const cs = await streamChat(chat({ max_tokens: 3 }));
  ok(cs.finish[0] === 'length' && cs.stop[0] === null, 'streamed length: stop_reason null');
});

await check('special tokens', async () => {
  const bias = { logit_bias: { 1: 100 }, max_tokens: 3 };
  const a = await client.completions.create(cmpl({ ...bias }));
  const b = await client.completions.create(cmpl({ ...bias, skip_special_tokens: false }));
  const c = await client.completions.create(cmpl({ ...bias, skip_special_tokens: false, spaces_between_special_tokens: false }));
  ok(a.choices[0].text === '', 'skip_special_tokens (default): control tokens are not rendered', a.choices[0].text);
  ok(b.choices[0].text === '<s> <s> <s>', 'skip_special_tokens false: rendered, spaces between', b.choices[0].text);
  ok(c.choices[0].text === '<s><s><s>', 'spaces_between_special_tokens false', c.choices[0].text);
  const s = await streamCmpl(cmpl({ ...bias, skip_special_tokens: false }));
  ok(s.text[0] === b.choices[0].text, 'special tokens streamed', s.text[0]);
  const e = await client.completions.create(cmpl({ logit_bias: { 2: 100 }, skip_special_tokens: false, include_stop_str_in_output: true }));
  ok(e.choices[0].text === '</s>', 'EOS text with include_stop_str_in_output and skip_special_tokens false', e.choices[0].text);
});

// ---- n ----
await check('n', async () => {
  const r = await client.completions.create(cmpl({ temperature: 1, seed: 5, n: 3, max_tokens: 6 }));
  ok(r.choices.length === 3 && r.choices.every((c, i) => c.index === i), 'n=3: three choices, indexes 0..2');
  ok(r.usage.completion_tokens === r.choices.length * 6 && r.usage.prompt_tokens === 5, 'n: completion tokens summed, prompt counted once', r.usage);
  ok(new Set(r.choices.map((c) => c.text)).size > 1, 'n: choices sampled independently', r.choices.map((c) => c.text));
  const r2 = await client.completions.create(cmpl({ temperature: 1, seed: 5, n: 3, max_tokens: 6 }));
  ok(r2.choices.every((c, i) => c.text === r.choices[i].text), 'n with a seed: reproducible');
  const g = await client.completions.create(cmpl({ n: 2, max_tokens: 10 }));
  ok(g.choices[0].text === g.choices[1].text && g.choices[0].text === greedy.slice(0, g.choices[0].text.length), 'greedy n=2: identical choices');
  const s = await streamCmpl(cmpl({ temperature: 1, seed: 5, n: 3, max_tokens: 6 }));
  ok([0, 1, 2].every((i) => s.text[i] === r.choices[i].text && s.finish[i] === 'length'), 'n streamed: same texts per index', s.text);
  const order = s.chunks.map((c) => c.choices[0].index);
  ok(order.some((v, i) => i > 0 && v !== order[i - 1]) && order.indexOf(1) < order.lastIndexOf(0), 'n streamed: chunks of different indexes interleave', order);
  const m = await client.completions.create({ model: MODEL, prompt: ['Lily', 'Tom'], n: 2, max_tokens: 3, temperature: 0 });
  ok(m.choices.length === 4 && m.choices[0].text === m.choices[1].text && m.choices[2].text === m.choices[3].text && m.choices[0].text !== m.choices[2].text,
    'several prompts with n: prompt-major order', m.choices.map((c) => c.text));
  const ch = await client.chat.completions.create(chat({ n: 2, temperature: 1, seed: 3 }));
  ok(ch.choices.length === 2 && ch.choices[1].index === 1 && ch.usage.completion_tokens === ch.choices.length * 12, 'chat n=2', ch.usage);
  const cs = await streamChat(chat({ n: 2, temperature: 1, seed: 3 }));
  ok(cs.text[0] === ch.choices[0].message.content && cs.text[1] === ch.choices[1].message.content, 'chat n streamed equals non-streamed');
  const big = await post('/v1/completions', cmpl({ n: 5 }));
  ok(big.status === 400 && big.json.error.param === 'n', 'n above the server maximum (--max-n 4) -> 400', big.json);
});

// ---- fingerprint, MindIE ----
await check('extras', async () => {
  const r = await client.chat.completions.create(chat());
  ok(typeof r.system_fingerprint === 'string' && r.system_fingerprint.includes('stories260K'), 'system_fingerprint names build and model', r.system_fingerprint);
  const s = await streamChat(chat());
  ok(s.chunks.every((c) => c.system_fingerprint === r.system_fingerprint), 'system_fingerprint in every chunk');
  const m = await post('/v1/chat/completions', chat({ stream: true, mindie: true, max_tokens: 6 }));
  const { chunks, done } = sse(m.text);
  const deltas = chunks.map((c) => c.choices[0].delta.content);
  ok(done && deltas.slice(1).every((d, i) => i === 0 || d.startsWith(deltas[i])), 'MindIE full_text streaming: each delta carries the whole text so far', deltas);
  const last = chunks[chunks.length - 1];
  ok(last.full_text === deltas[deltas.length - 1] && last.usage && typeof last.usage.prefill_time === 'number' &&
    Array.isArray(last.usage.decode_time_arr) && last.usage.decode_time_arr.length === last.usage.completion_tokens - 1,
  'MindIE: last chunk has full_text, usage with prefill_time and decode_time_arr', last);
  const n = await post('/v1/chat/completions', chat({ mindie: true }));
  ok(typeof n.json.usage.prefill_time === 'number' && n.json.usage.decode_time_arr.length === 11, 'MindIE non-streamed: timings in usage', n.json.usage);
  const off = await client.chat.completions.create(chat());
  ok(off.usage.prefill_time === undefined, 'MindIE extras off unless asked');
});

// ---- rejections ----
await check('rejections', async () => {
  const cases = [
    ['/v1/completions', cmpl({ best_of: 3 }), 'best_of'],
    ['/v1/completions', cmpl({ suffix: 'x' }), 'suffix'],
    ['/v1/completions', cmpl({ logprobs: 6 }), 'logprobs'],
    ['/v1/chat/completions', chat({ logprobs: true, top_logprobs: 21 }), 'top_logprobs'],
    ['/v1/chat/completions', chat({ top_logprobs: 2 }), 'top_logprobs'],
    ['/v1/chat/completions', chat({ response_format: { type: 'xml' } }), 'response_format'],
    ['/v1/chat/completions', chat({ top_p: 0 }), 'top_p'],
    ['/v1/chat/completions', chat({ top_k: -5 }), 'top_k'],
    ['/v1/chat/completions', chat({ logit_bias: { 99999: 1 } }), 'logit_bias'],
    ['/v1/chat/completions', chat({ stop_token_ids: [99999] }), 'stop_token_ids'],
    ['/v1/chat/completions', chat({ presence_penalty: 3 }), 'presence_penalty'],
    ['/v1/chat/completions', chat({ n: 0 }), 'n'],
  ];
  for (const [path, body, param] of cases) {
    const r = await post(path, body);
    ok(r.status === 400 && r.json && r.json.error.param === param && r.json.error.type === 'invalid_request_error',
      `${param}: ${JSON.stringify(body).slice(70, 130)} -> 400`, r.json);
  }
  let threw = null;
  try { await client.completions.create(cmpl({ best_of: 2 })); } catch (e) { threw = e; }
  ok(threw && threw.status === 400, 'SDK sees best_of as a 400');
});

process.exit(failed() ? 1 : 0);
