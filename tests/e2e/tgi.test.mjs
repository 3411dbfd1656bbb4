// tgi.test.mjs - the TGI / SageMaker LMI text-generation schema (issue 15)
// through nginx with the REAL engine, driven by the official
// @huggingface/inference client: its request / streamingRequest calls
// pointed at /generate and /generate_stream (the raw TGI schema), its
// textGeneration / textGenerationStream calls pointed at the server (which
// version 4 of the client sends to /v1/completions with the TGI parameters
// flattened), plus raw fetch for /invocations (LMI), POST / and /info.
// One TAP line per check (no plan: the .sh wrapper counts).
// Environment: BASE, API_KEY, MODEL, SUITE = stories (stories260K.gguf,
// --ctx-size 512) | scripted (the scripted fixture: EOS, stop sequences
// across tokens, --lmi-finish-reasons chat).
import { InferenceClient, setLogger } from '@huggingface/inference';
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY = process.env.API_KEY || 'none';
const MODEL = process.env.MODEL;
const SUITE = process.env.SUITE || 'stories';
const { ok, check, post, auth, failed } = harness({ prefix: `[${SUITE}] `, timeoutMs: 120000 });
// request / streamingRequest log a deprecation warning on every call
setLogger({ debug() {}, info() {}, log() {}, warn() {}, error: console.error });
const hf = new InferenceClient(KEY);
const oai = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 60000, maxRetries: 0 });

const generate = (body) => hf.endpoint(`${BASE}/generate`).request(body);
async function generateStream(body) {
  const events = [];
  for await (const ev of hf.endpoint(`${BASE}/generate_stream`).streamingRequest(body)) events.push(ev);
  return events;
}
// the client's error for a refused request: message and HTTP status
async function refusal(fn) {
  try { await fn(); return null; } catch (e) { return { msg: e.message, status: e.httpResponse && e.httpResponse.status, body: e.httpResponse && e.httpResponse.body }; }
}
const tokenize = async (text) => (await post('/tokenize', { prompt: text })).json.tokens;
// JSON lines of an LMI stream
const jsonl = (text) => text.split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
const close = (a, b, tol = 1e-6) => typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= tol;
const isToken = (t) => t && Number.isInteger(t.id) && typeof t.text === 'string' && typeof t.logprob === 'number' && typeof t.special === 'boolean';

if (SUITE === 'stories') await stories();
else await scripted();
process.exitCode = failed() ? 1 : 0;

async function stories() {
  const P = 'Once upon a time';
  const N = 12;
  const cmpl = async (extra) => (await oai.completions.create({ model: MODEL, prompt: P, max_tokens: N, temperature: 0, ...extra })).choices[0];
  const greedy = (await cmpl({})).text;
  ok(greedy.startsWith(', there was a little'), 'greedy reference through /v1/completions', greedy);

  await check('/generate: greedy text, TGI response shape', async () => {
    const r = await generate({ inputs: P, parameters: { max_new_tokens: N } });
    ok(r.generated_text === greedy && Object.keys(r).join() === 'generated_text', 'no parameters asking to sample: greedy, only generated_text', r);
    const d = await generate({ inputs: P, parameters: { max_new_tokens: N, details: true } });
    const det = d.details;
    ok(det && Object.keys(det).join() === 'finish_reason,generated_tokens,seed,prefill,tokens', 'details keys in TGI order (no top_tokens without top_n_tokens)', det);
    ok(det.finish_reason === 'length' && det.generated_tokens === N && det.seed === null && det.prefill.length === 0, 'details: length, generated_tokens, seed null when greedy, prefill empty', det);
    ok(det.tokens.length === N && det.tokens.every(isToken) && det.tokens.every((t) => !t.special), 'details.tokens: {id, text, logprob, special} per token', det.tokens);
    ok(det.tokens.map((t) => t.text).join('') === greedy, 'token texts concatenate to generated_text', det.tokens);
    const lp = (await cmpl({ logprobs: 1 })).logprobs;
    ok(det.tokens.every((t, i) => close(t.logprob, lp.token_logprobs[i])), 'token logprobs equal /v1/completions logprobs', { tgi: det.tokens.map((t) => t.logprob), oai: lp.token_logprobs });
  });

  await check('decoder_input_details: prefill logprobs equal prompt_logprobs', async () => {
    const ids = await tokenize(P);
    const r = await generate({ inputs: P, parameters: { max_new_tokens: 2, decoder_input_details: true } });
    const pre = r.details && r.details.prefill;
    ok(pre && pre.length === ids.length && pre.every((t, i) => t.id === ids[i]), 'prefill: one entry per prompt token (BOS included), ids as /tokenize', { pre, ids });
    ok(pre[0].logprob === null && Object.keys(pre[0]).join() === 'id,text,logprob', 'first prefill token: logprob null; {id, text, logprob}', pre[0]);
    const c = await cmpl({ max_tokens: 2, prompt_logprobs: 0 });
    const want = c.prompt_logprobs.map((e, i) => (e ? e[String(ids[i])].logprob : null));
    ok(pre.every((t, i) => (i === 0 ? t.logprob === null : close(t.logprob, want[i]))), 'prefill logprobs equal prompt_logprobs of the same prompt (/v1/completions)', { tgi: pre.map((t) => t.logprob), want });
    ok(pre[1].text === ' Once', 'prefill token text', pre[1]);
  });

  await check('top_n_tokens', async () => {
    const r = await generate({ inputs: P, parameters: { max_new_tokens: 4, top_n_tokens: 3, details: true } });
    const top = r.details.top_tokens;
    ok(Array.isArray(top) && top.length === 4 && top.every((a) => a.length === 3 && a.every(isToken)), 'details.top_tokens: 3 tokens per step', top);
    ok(top.every((a, i) => a[0].id === r.details.tokens[i].id && a[0].logprob >= a[1].logprob && a[1].logprob >= a[2].logprob), 'best first; greedy picks the first', top);
    const lp = (await cmpl({ max_tokens: 4, logprobs: 3 })).logprobs.top_logprobs;
    ok(top.every((a, i) => a.every((t) => close(t.logprob, lp[i][t.text]))), 'alternatives equal /v1/completions top logprobs', { top, lp });
  });

  await check('/generate_stream: one event per token, the last with text and details', async () => {
    const ref = await generate({ inputs: P, parameters: { max_new_tokens: N, details: true } });
    const ev = await generateStream({ inputs: P, parameters: { max_new_tokens: N, details: true, top_n_tokens: 2 } });
    ok(ev.length === N && ev.every((e, i) => e.index === i + 1 && isToken(e.token)), 'N events, index 1..N, token objects', ev);
    ok(ev.slice(0, -1).every((e) => e.generated_text === null && e.details === null), 'intermediate events: generated_text and details null', ev[0]);
    ok(ev.every((e) => Array.isArray(e.top_tokens) && e.top_tokens.length === 2 && e.top_tokens[0].id === e.token.id), 'top_tokens in every event', ev[0]);
    const last = ev[ev.length - 1];
    ok(last.generated_text === greedy && ev.map((e) => e.token.id).join() === ref.details.tokens.map((t) => t.id).join(), 'last event: generated_text; same tokens as /generate', last);
    ok(last.details && Object.keys(last.details).join() === 'finish_reason,generated_tokens,seed,input_length' && last.details.finish_reason === 'length' && last.details.generated_tokens === N && last.details.input_length === (await tokenize(P)).length, 'stream details {finish_reason, generated_tokens, seed, input_length}', last.details);
    const plain = await generateStream({ inputs: P, parameters: { max_new_tokens: 3 } });
    ok(plain.length === 3 && plain[2].details === null && !('top_tokens' in plain[0]) && plain[2].generated_text === greedy.slice(0, plain[2].generated_text.length), 'without details: details null, no top_tokens key', plain);
    const raw = await fetch(`${BASE}/generate_stream`, { method: 'POST', headers: auth, body: JSON.stringify({ inputs: P, parameters: { max_new_tokens: 2 } }) });
    const text = await raw.text();
    ok(raw.headers.get('content-type').startsWith('text/event-stream') && !text.includes('[DONE]') && text.split('\n\n').filter((l) => l.startsWith('data:')).length === 2, 'text/event-stream, no [DONE] (TGI)', text);
  });

  await check('stop sequences across tokens', async () => {
    const idx = greedy.indexOf('little g');
    const r = await generate({ inputs: P, parameters: { max_new_tokens: 20, stop: ['zzz', 'little g'], details: true } });
    ok(idx > 0 && r.generated_text === greedy.slice(0, idx + 8) && r.details.finish_reason === 'stop_sequence', 'TGI: stops on a sequence split over tokens, keeps it in generated_text', r);
    ok(r.details.tokens.length === r.details.generated_tokens && r.details.tokens.map((t) => t.text).join('').startsWith(r.generated_text), 'tokens up to the one completing the stop', r.details);
    const s = await generateStream({ inputs: P, parameters: { max_new_tokens: 20, stop: ['little g'], details: true } });
    const last = s[s.length - 1];
    ok(last.generated_text === r.generated_text && last.details.finish_reason === 'stop_sequence' && s.length === r.details.generated_tokens, 'streamed: same text and reason, one event per token', last);
    const l = (await post('/invocations', { inputs: P, parameters: { max_new_tokens: 20, stop_sequences: ['little g'], details: true } })).json;
    ok(l.generated_text === greedy.slice(0, idx) && l.details.finish_reason === 'stop_sequence', 'LMI (/invocations, stop_sequences): the stop sequence is cut', l);
  });

  await check('seeds and sampling parameters (same engine as /v1/completions)', async () => {
    const body = (p) => ({ inputs: P, parameters: { max_new_tokens: 16, details: true, ...p } });
    const a = await generate(body({ do_sample: true, temperature: 1.4, seed: 7 }));
    const b = await generate(body({ do_sample: true, temperature: 1.4, seed: 7 }));
    ok(a.generated_text === b.generated_text && a.details.seed === 7, 'same seed, same text; details.seed', [a, b]);
    const o = await cmpl({ max_tokens: 16, temperature: 1.4, seed: 7 });
    ok(o.text === a.generated_text, 'equals /v1/completions with the same temperature and seed', [a.generated_text, o.text]);
    const texts = new Set();
    for (const seed of [1, 2, 3, 4]) texts.add((await generate(body({ temperature: 1.5, seed }))).generated_text);
    ok(texts.size > 1, 'temperature alone samples: different seeds differ', [...texts]);
    const un = await generate(body({ do_sample: true, temperature: 1.5 }));
    ok(Number.isSafeInteger(un.details.seed) && un.details.seed >= 0, 'unseeded sampling reports the seed it drew', un.details.seed);
    const replay = await generate(body({ do_sample: true, temperature: 1.5, seed: un.details.seed }));
    ok(replay.generated_text === un.generated_text, 'the reported seed replays the text', [un.generated_text, replay.generated_text]);
    const g = await generate(body({ do_sample: false, temperature: 1.9, top_k: 50, seed: 3 }));
    ok(g.generated_text.startsWith(greedy) && g.details.seed === null, 'do_sample false: greedy whatever the temperature', g);
    for (const [name, p, q] of [
      ['top_k', { top_k: 3, temperature: 1.3, seed: 11 }, { top_k: 3, temperature: 1.3, seed: 11 }],
      ['top_p', { top_p: 0.6, temperature: 1.3, seed: 12 }, { top_p: 0.6, temperature: 1.3, seed: 12 }],
      ['repetition_penalty', { repetition_penalty: 1.6 }, { repetition_penalty: 1.6, temperature: 0 }],
      ['frequency_penalty', { frequency_penalty: 1.5 }, { frequency_penalty: 1.5, temperature: 0 }],
    ]) {
      const t = await generate(body(p));
      const c = await cmpl({ max_tokens: 16, ...q });
      ok(t.generated_text === c.text, `${name}: same as /v1/completions`, [t.generated_text, c.text]);
    }
    const rp = await generate(body({ repetition_penalty: 1.6, max_new_tokens: 40 }));
    const plain = await generate(body({ max_new_tokens: 40 }));
    ok(rp.generated_text !== plain.generated_text, 'repetition_penalty changes the greedy text', [rp.generated_text, plain.generated_text]);
    const t1 = await generate(body({ do_sample: true, temperature: 1.5, typical_p: 0.001, seed: 1 }));
    const t2 = await generate(body({ do_sample: true, temperature: 1.5, typical_p: 0.001, seed: 2 }));
    ok(t1.generated_text === t2.generated_text && t1.details.seed === 1, 'typical_p: a tiny mass keeps one token per step (seeds agree)', [t1, t2]);
  });

  await check('max_new_tokens, return_full_text, truncate', async () => {
    const ids = await tokenize(P);
    const d = await generate({ inputs: P, parameters: { details: true, ignore_eos: true } });
    ok(d.details.generated_tokens + ids.length === 512 && d.details.finish_reason === 'length', 'TGI default max_new_tokens: up to the end of the context', d.details.generated_tokens);
    const f = await generate({ inputs: P, parameters: { max_new_tokens: N, return_full_text: true } });
    ok(f.generated_text === P + greedy, 'return_full_text prepends the inputs', f);
    const long = 'Lily and Tom went to the park to play with a big red ball. ' + P;
    const lids = await tokenize(long);
    const t = await generateStream({ inputs: long, parameters: { max_new_tokens: 6, truncate: 5, details: true } });
    const last = t[t.length - 1];
    const want = await oai.completions.create({ model: MODEL, prompt: lids.slice(-5), max_tokens: 6, temperature: 0 });
    ok(last.details.input_length === 5 && last.generated_text === want.choices[0].text, 'truncate keeps the last N input tokens', { last, want: want.choices[0].text });
  });

  await check('POST / (TGI compat): array reply, stream in the body', async () => {
    const r = await post('/', { inputs: P, parameters: { max_new_tokens: 4 } });
    ok(r.status === 200 && Array.isArray(r.json) && r.json.length === 1 && r.json[0].generated_text.startsWith(P), 'array of one; return_full_text defaults to true there', r.json);
    const s = await post('/', { inputs: P, stream: true, parameters: { max_new_tokens: 3, return_full_text: false } });
    const ev = s.text.split('\n\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    ok(s.headers.get('content-type').startsWith('text/event-stream') && ev.length === 3 && ev[2].generated_text === greedy.slice(0, ev[2].generated_text.length), '"stream": true gives the TGI event stream', s.text);
  });

  await check('/info', async () => {
    const r = await fetch(`${BASE}/info`, { headers: auth });
    const j = await r.json();
    ok(r.status === 200 && j.model_id === MODEL && j.max_total_tokens === 512 && j.max_input_tokens === 511 && typeof j.version === 'string' && j.max_best_of === 1, 'model id, max input and total tokens, version', j);
  });

  await check('grammar: JSON schema and regex constrain /generate, /generate_stream and /invocations', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 10, maximum: 99 } }, required: ['n'], additionalProperties: false };
    for (const sample of [false, true]) {
      const r = await generate({ inputs: P, parameters: { max_new_tokens: 40, do_sample: sample, seed: 7, details: true, grammar: { type: 'json', value: schema } } });
      let v = null;
      try { v = JSON.parse(r.generated_text); } catch (e) { /* checked below */ }
      ok(v && Object.keys(v).join() === 'n' && Number.isInteger(v.n) && v.n >= 10 && v.n <= 99 && r.details.finish_reason === 'eos_token',
        `json schema (${sample ? 'sampled' : 'greedy'}): the text validates and ends with the grammar`, r);
    }
    const js = await generate({ inputs: P, parameters: { max_new_tokens: 40, grammar: { type: 'json_schema', value: { name: 's', schema: { enum: ['yes', 'no'] } } } } });
    ok(['"yes"', '"no"'].includes(js.generated_text.trim()), 'json_schema form {name, schema}', js);
    const rx = await generate({ inputs: P, parameters: { max_new_tokens: 10, grammar: { type: 'regex', value: '[0-9]{3}-[a-z]{2}' } } });
    ok(/^[0-9]{3}-[a-z]{2}$/.test(rx.generated_text), 'regex', rx);
    const ev = await generateStream({ inputs: P, parameters: { max_new_tokens: 10, grammar: { type: 'regex', value: '(cat|dog)s?' } } });
    const last = ev[ev.length - 1];
    ok(/^(cat|dog)s?$/.test(last.generated_text) && ev.filter((e) => !e.token.special).map((e) => e.token.text).join('') === last.generated_text,
      '/generate_stream: tokens add up to a text matching the regex', ev);
    const li = await post('/invocations', { inputs: P, parameters: { max_new_tokens: 10, grammar: { type: 'regex', value: '[A-Z]{4}' } } });
    ok(li.status === 200 && /^[A-Z]{4}$/.test(li.json.generated_text), '/invocations (LMI)', li.json);
  });

  await check('refusals in TGI shape (422 validation) through the client', async () => {
    for (const [name, params, needle] of [
      ['watermark', { watermark: true }, 'watermark'],
      ['grammar keyword the engine cannot enforce', { grammar: { type: 'json', value: { type: 'array', uniqueItems: true } } }, 'uniqueItems'],
      ['grammar regex not a string', { grammar: { type: 'regex', value: 5 } }, 'grammar'],
      ['grammar regex that does not compile', { grammar: { type: 'regex', value: '[0-9' } }, 'grammar'],
      ['typical_p out of range', { typical_p: 1.5 }, 'typical_p'],
      ['best_of 2', { best_of: 2 }, 'best_of'],
      ['top_n_tokens 50', { top_n_tokens: 50 }, 'top_n_tokens'],
      ['max_new_tokens 0', { max_new_tokens: 0 }, 'max_new_tokens'],
      ['max_new_tokens beyond the context', { max_new_tokens: 600 }, 'max_new_tokens'],
      ['truncate beyond the context', { truncate: 5000 }, 'truncate'],
      ['temperature 3', { temperature: 3 }, 'temperature'],
      ['adapter_id', { adapter_id: 'my-lora' }, 'adapter_id'],
    ]) {
      const e = await refusal(() => generate({ inputs: P, parameters: params }));
      ok(e && e.status === 422 && e.msg.includes(needle) && e.body.error_type === 'validation' && e.body.error.startsWith('Input validation error: '), `refused: ${name}`, e);
    }
    const es = await refusal(() => generateStream({ inputs: P, parameters: { decoder_input_details: true } }));
    ok(es && es.status === 422 && es.msg.includes('decoder_input_details'), 'refused: decoder_input_details on /generate_stream', es);
    const bad = await post('/generate', '{"inputs":');
    ok(bad.status === 400 && bad.json.error_type === 'validation' && !('type' in bad.json), 'invalid JSON: 400 in TGI shape', bad.json);
    const li = await post('/generate', { inputs: ['a', 'b'] });
    ok(li.status === 422 && li.json.error.includes('must be a string'), 'TGI takes one input (a list is LMI only)', li.json);
    const noauth = await post('/generate', { inputs: P }, { 'Content-Type': 'application/json' });
    ok(noauth.status === 401 && noauth.json.error_type === 'authentication' && noauth.headers.get('www-authenticate') === 'Bearer', '401 in TGI shape', noauth.json);
    const get = await fetch(`${BASE}/generate`, { headers: auth });
    const gj = await get.json();
    ok(get.status === 405 && gj.error_type === 'validation' && get.headers.get('allow') === 'POST', 'GET /generate: 405 in TGI shape', gj);
  });

  await check('textGeneration / textGenerationStream (the client speaks /v1/completions)', async () => {
    const ep = hf.endpoint(BASE);
    const r = await ep.textGeneration({ model: MODEL, inputs: P, parameters: { max_new_tokens: N, do_sample: false, temperature: 1.8, details: true } });
    ok(r.generated_text === greedy, 'textGeneration: do_sample false is greedy there too (details ignored)', r);
    const f = await ep.textGeneration({ model: MODEL, inputs: P, parameters: { max_new_tokens: N, temperature: 0, return_full_text: true } });
    ok(f.generated_text === P + greedy, 'textGeneration: return_full_text', f);
    const s1 = await ep.textGeneration({ model: MODEL, inputs: P, parameters: { max_new_tokens: N, temperature: 1.3, top_k: 20, top_p: 0.9, seed: 5 } });
    const s2 = await generate({ inputs: P, parameters: { max_new_tokens: N, temperature: 1.3, top_k: 20, top_p: 0.9, seed: 5 } });
    ok(s1.generated_text === s2.generated_text, 'textGeneration and /generate agree on a seeded sample', [s1, s2]);
    const st = await ep.textGeneration({ model: MODEL, inputs: P, parameters: { max_new_tokens: 20, temperature: 0, stop: ['little g'] } });
    ok(st.generated_text === greedy.slice(0, greedy.indexOf('little g')), 'textGeneration: stop (cut, the OpenAI way)', st);
    let text = '';
    for await (const ch of ep.textGenerationStream({ model: MODEL, inputs: P, parameters: { max_new_tokens: N, do_sample: false } })) text += ch.choices[0].text;
    ok(text === greedy, 'textGenerationStream: chunks add up to the greedy text', text);
    const e = await refusal(() => ep.textGeneration({ model: MODEL, inputs: P, parameters: { watermark: true } }));
    ok(e && e.status === 400 && e.body.error.param === 'watermark' && e.body.error.code === 'unsupported_parameter', 'textGeneration: watermark refused (OpenAI error there)', e);
    // there `grammar` is llama.cpp's field (a GBNF string): TGI's object is refused by name
    const g = await refusal(() => ep.textGeneration({ model: MODEL, inputs: P, parameters: { grammar: { type: 'regex', value: 'a' } } }));
    ok(g && g.status === 400 && g.body.error.param === 'grammar', 'textGeneration: a TGI grammar object is a 400 on /v1/completions', g);
    const gb = await ep.textGeneration({ model: MODEL, inputs: P, parameters: { max_new_tokens: 8, temperature: 0, grammar: 'root ::= [0-9] [0-9] [0-9]' } });
    ok(/^[0-9]{3}$/.test(gb.generated_text), 'textGeneration: a GBNF grammar string constrains the text', gb);
  });

  await check('/invocations with inputs: LMI schema', async () => {
    const r = await post('/invocations', { inputs: P, parameters: { max_new_tokens: N, details: true, decoder_input_details: true, top_n_tokens: 2 } });
    const d = r.json.details;
    ok(r.status === 200 && r.json.generated_text === greedy && d.inputs === P && d.finish_reason === 'length' && d.generated_tokens === N, 'generated_text; details with inputs', r.json);
    ok(d.tokens.length === N && d.tokens.every((t) => Object.keys(t).join() === 'id,text,log_prob'), 'LMI tokens {id, text, log_prob}', d.tokens);
    ok(d.prefill[0].log_prob === null && d.prefill.length === (await tokenize(P)).length && d.top_tokens.length === N, 'prefill and top_tokens', d);
    const dflt = await post('/invocations', { inputs: P, parameters: { details: true } });
    ok(dflt.json.details.generated_tokens === 30, 'LMI default max_new_tokens 30', dflt.json.details);
    const batch = await post('/invocations', { inputs: [P, 'Lily'], parameters: { max_new_tokens: 4 } });
    const lily = await oai.completions.create({ model: MODEL, prompt: 'Lily', max_tokens: 4, temperature: 0 });
    ok(Array.isArray(batch.json) && batch.json.length === 2 && batch.json[0].generated_text === greedy.slice(0, batch.json[0].generated_text.length) && batch.json[1].generated_text === lily.choices[0].text, 'a list of inputs gives a list, in order', batch.json);
    const s = await post('/invocations', { inputs: P, stream: true, parameters: { max_new_tokens: 5, details: true } });
    const lines = jsonl(s.text);
    ok(s.headers.get('content-type').startsWith('application/jsonlines') && lines.length === 5 && lines.every((l) => l.token && 'log_prob' in l.token), 'stream: JSON lines, one {"token"} per token', s.text);
    const last = lines[lines.length - 1];
    ok(last.generated_text === greedy.slice(0, last.generated_text.length) && last.details.finish_reason === 'length' && last.details.inputs === P && !('generated_text' in lines[0]), 'last line: generated_text and details', last);
    const err = await post('/invocations', { inputs: P, parameters: { watermark: true } });
    ok(err.status === 422 && err.json.error_type === 'validation' && err.json.code === 422, 'errors in TGI shape with LMI\'s code', err.json);
    const se = await post('/invocations', { inputs: [P, P], stream: true });
    ok(se.status === 422 && se.json.error.includes('stream'), 'a list of inputs cannot stream', se.json);
    const chat = await post('/invocations', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
    const comp = await post('/invocations', { prompt: P, max_tokens: 3, temperature: 0 });
    ok(chat.json.object === 'chat.completion' && comp.json.object === 'text_completion' && comp.json.choices[0].text === greedy.slice(0, comp.json.choices[0].text.length), 'messages and prompt still dispatch to chat and completions', [chat.json, comp.json]);
    const none = await post('/invocations', { input: P });
    ok(none.status === 400 && none.json.error.type === 'invalid_request_error', 'neither messages, prompt nor inputs: OpenAI 400', none.json);
  });
}

async function scripted() {
  const IN = '\n'; // the scripted model's content script: "Hello", " from the", " scripted model.", <|im_end|>
  const TEXT = 'Hello from the scripted model.';
  await check('end-of-sequence token', async () => {
    const r = await generate({ inputs: IN, parameters: { max_new_tokens: 20, details: true } });
    const t = r.details.tokens;
    ok(r.generated_text === TEXT && r.details.finish_reason === 'eos_token' && r.details.generated_tokens === 4, 'finish_reason eos_token; the EOS text is not in generated_text', r);
    ok(t.length === 4 && t[3].special === true && t[3].text === '<|im_end|>' && t.slice(0, 3).every((x) => !x.special), 'the EOS token is listed, special: true', t);
    const ev = await generateStream({ inputs: IN, parameters: { max_new_tokens: 20, details: true } });
    const last = ev[ev.length - 1];
    ok(ev.length === 4 && last.token.special && last.generated_text === TEXT && last.details.finish_reason === 'eos_token', 'streamed: the last event carries the EOS token, the text and details', ev);
    const l = await post('/invocations', { inputs: IN, stream: true, parameters: { details: true } });
    const lines = jsonl(l.text);
    ok(lines.length === 4 && lines[3].token.special_token === true && !('special_token' in lines[0].token) && lines[3].details.finish_reason === 'eos_token', 'LMI stream: special_token on the EOS line', lines);
    const ie = await post('/invocations', { inputs: IN, parameters: { max_new_tokens: 6, ignore_eos_token: true, details: true } });
    ok(ie.json.details.finish_reason === 'length' && ie.json.details.generated_tokens === 6, 'ignore_eos_token: runs to max_new_tokens', ie.json);
    const ie2 = await generate({ inputs: IN, parameters: { max_new_tokens: 6, ignore_eos: true, details: true } });
    ok(ie2.details.finish_reason === 'length' && ie2.details.generated_tokens === 6, 'ignore_eos on /generate', ie2.details);
  });
  await check('stop sequences across token boundaries', async () => {
    const a = await generate({ inputs: IN, parameters: { stop: ['Hello from the'], details: true } });
    ok(a.generated_text === 'Hello from the' && a.details.generated_tokens === 2 && a.details.finish_reason === 'stop_sequence', 'TGI: a stop over two tokens ending at a token boundary', a);
    const b = await generate({ inputs: IN, parameters: { stop: ['o from'], details: true } });
    ok(b.generated_text === 'Hello from' && b.details.generated_tokens === 2, 'TGI: a stop ending inside a token stops there (kept, the rest cut)', b);
    const c = await post('/invocations', { inputs: IN, parameters: { stop: ['o from'], details: true } });
    ok(c.json.generated_text === 'Hell' && c.json.details.finish_reason === 'stop_sequence', 'LMI: the stop sequence is cut', c.json);
    const d = await post('/invocations', { inputs: IN, parameters: { stop: ['o from'], include_stop_str_in_output: true } });
    ok(d.json.generated_text === 'Hello from', 'LMI with include_stop_str_in_output', d.json);
  });
  await check('--lmi-finish-reasons: chat reports eos_token / stop_sequence', async () => {
    const msgs = [{ role: 'user', content: 'Hi' }];
    const e = await oai.chat.completions.create({ model: MODEL, messages: msgs });
    ok(e.choices[0].finish_reason === 'eos_token' && e.choices[0].message.content === TEXT, 'EOS: eos_token', e.choices[0]);
    const s = await oai.chat.completions.create({ model: MODEL, messages: msgs, stop: ['scripted'] });
    ok(s.choices[0].finish_reason === 'stop_sequence' && s.choices[0].stop_reason === 'scripted', 'stop string: stop_sequence', s.choices[0]);
    const l = await oai.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 2 });
    ok(l.choices[0].finish_reason === 'length', 'length stays length', l.choices[0]);
    let fin = null;
    for await (const ch of await oai.chat.completions.create({ model: MODEL, messages: msgs, stream: true })) for (const c of ch.choices) if (c.finish_reason) fin = c.finish_reason;
    ok(fin === 'eos_token', 'streamed: eos_token in the last chunk', fin);
    const inv = await post('/invocations', { messages: msgs, stop: ['scripted'] });
    ok(inv.json.choices[0].finish_reason === 'stop_sequence', '/invocations chat: stop_sequence', inv.json);
    const cmp = await oai.completions.create({ model: MODEL, prompt: IN, max_tokens: 10 });
    ok(cmp.choices[0].finish_reason === 'stop', 'completions keep OpenAI\'s finish_reason', cmp.choices[0]);
  });
}
