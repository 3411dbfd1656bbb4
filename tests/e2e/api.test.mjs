// api.test.mjs - drives llm-fcgi through nginx with the official `openai` SDK
// and raw fetch; prints one TAP line per check (no plan: the .sh wrapper
// counts). Environment: BASE (http://127.0.0.1:PORT), API_KEY, MODEL,
// E2E_CONCURRENCY=1 to run the four-streams check.
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY = process.env.API_KEY || 'none';
const MODEL = process.env.MODEL;
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 30000, maxRetries: 0 });

const { ok, check, post, auth, failed } = harness({ detailChars: 600 });

// Parses an SSE body into the JSON payloads; [DONE] must be last.
function sse(text) {
  const events = text.split('\n\n').filter((e) => e.length > 0);
  const data = events.filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  return { done: data[data.length - 1] === '[DONE]', chunks: data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)) };
}

const isErr = (j, type) => j && j.error && typeof j.error.message === 'string' && j.error.type === type &&
  'param' in j.error && 'code' in j.error;
const chatBody = (extra = {}) => ({ model: MODEL, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 40, temperature: 0, ...extra });

let chatText = null;
await check('chat non-streamed', async () => {
  const r = await client.chat.completions.create(chatBody());
  ok(/^chatcmpl-[0-9a-f]{32}$/.test(r.id), 'chat: id is chatcmpl- + 32 hex', r.id);
  ok(r.object === 'chat.completion', 'chat: object');
  ok(Number.isInteger(r.created) && Math.abs(r.created - Date.now() / 1000) < 600, 'chat: created');
  ok(r.model === MODEL, 'chat: model is the served name', r.model);
  const c = r.choices[0];
  ok(r.choices.length === 1 && c.index === 0, 'chat: one choice with index 0');
  ok(c.message.role === 'assistant' && typeof c.message.content === 'string', 'chat: assistant message');
  ok(Array.isArray(c.message.tool_calls) && c.message.tool_calls.length === 0, 'chat: tool_calls []');
  ok(c.logprobs === null && c.stop_reason === null, 'chat: logprobs and stop_reason null');
  ok(['stop', 'length'].includes(c.finish_reason), 'chat: finish_reason', c.finish_reason);
  const u = r.usage;
  ok(u.prompt_tokens > 0 && u.completion_tokens > 0 && u.total_tokens === u.prompt_tokens + u.completion_tokens,
    'chat: usage adds up', u);
  ok(u.completion_tokens <= 40 && (c.finish_reason === 'stop' || u.completion_tokens === 40), 'chat: max_tokens respected', u);
  ok('prompt_tokens_details' in u, 'chat: prompt_tokens_details');
  ok(r.prompt_logprobs === null && r.kv_transfer_params === null, 'chat: vLLM extras null');
  chatText = c.message.content;
});

await check('chat streamed', async () => {
  const stream = await client.chat.completions.create(chatBody({ stream: true, stream_options: { include_usage: true } }));
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  ok(chunks.length >= 3, 'chat stream: several chunks', chunks.length);
  ok(chunks.every((c) => c.id === chunks[0].id) && /^chatcmpl-[0-9a-f]{32}$/.test(chunks[0].id), 'chat stream: same id in every chunk');
  ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === MODEL), 'chat stream: object and model');
  const first = chunks[0].choices[0];
  ok(first.delta.role === 'assistant' && first.delta.content === '', 'chat stream: first delta is role + empty content', first);
  const last = chunks[chunks.length - 1];
  ok(last.choices.length === 0 && last.usage && last.usage.total_tokens === last.usage.prompt_tokens + last.usage.completion_tokens,
    'chat stream: include_usage adds a final usage chunk with empty choices', last);
  const fin = chunks[chunks.length - 2].choices[0];
  ok(['stop', 'length'].includes(fin.finish_reason), 'chat stream: finish_reason in the last choice chunk', fin);
  const text = chunks.flatMap((c) => c.choices.map((x) => x.delta.content || '')).join('');
  ok(chatText !== null && text === chatText, 'chat stream: text equals the non-streamed text', { text, chatText });
});

await check('seeded sampling', async () => {
  const body = { model: MODEL, prompt: 'Once upon a time', max_tokens: 24, temperature: 1, seed: 1234 };
  const a = await client.completions.create(body);
  const b = await client.completions.create(body);
  ok(a.choices[0].text === b.choices[0].text, 'seeded temperature-1 requests repeat exactly', [a.choices[0].text, b.choices[0].text]);
  const s = await client.completions.create({ ...body, stream: true });
  let text = '';
  for await (const ch of s) text += ch.choices.map((x) => x.text).join('');
  ok(text === a.choices[0].text, 'seeded stream text equals the non-streamed text', [text, a.choices[0].text]);
  const parts = await client.chat.completions.create(chatBody({
    messages: [{ role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Tell me ' }, { type: 'text', text: 'a story.' }] }],
  }));
  ok(typeof parts.choices[0].message.content === 'string' && parts.usage.prompt_tokens > 0, 'chat with text content parts');
});

await check('chat raw SSE', async () => {
  const r = await post('/v1/chat/completions', chatBody({ stream: true }));
  ok(r.status === 200 && r.headers.get('content-type').startsWith('text/event-stream'), 'SSE: status and content type');
  ok(r.headers.get('cache-control') === 'no-cache', 'SSE: Cache-Control no-cache');
  ok(r.text.endsWith('data: [DONE]\n\n'), 'SSE: ends with data: [DONE]');
  ok(r.text.split('\n\n').filter((e) => e).every((e) => e.startsWith('data: ') || e.startsWith(':')), 'SSE: every event is a data line');
});

let cmplText = null;
await check('completions', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 });
  ok(/^cmpl-[0-9a-f]{32}$/.test(r.id) && r.object === 'text_completion', 'completion: id and object', r.id);
  const c = r.choices[0];
  ok(c.index === 0 && typeof c.text === 'string' && c.logprobs === null, 'completion: choice fields');
  ok(['stop', 'length'].includes(c.finish_reason) && c.stop_reason === null && c.prompt_logprobs === null,
    'completion: finish/stop reason, prompt_logprobs');
  ok(r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, 'completion: usage');
  ok(r.kv_transfer_params === null, 'completion: kv_transfer_params');
  cmplText = c.text;
  const s = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0, stream: true });
  let text = '';
  let id = null, same = true, finish = null;
  for await (const ch of s) {
    id = id || ch.id;
    same &&= ch.id === id && ch.object === 'text_completion';
    for (const x of ch.choices) { text += x.text; finish = x.finish_reason || finish; }
  }
  ok(same, 'completion stream: same id, object text_completion');
  ok(text === cmplText && finish !== null, 'completion stream: text equals non-streamed, finish_reason set', { text, cmplText });
});

await check('completions prompts', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: ['One', 'Two two', 'Three'], max_tokens: 5, temperature: 0 });
  ok(r.choices.length === 3 && r.choices.every((c, i) => c.index === i), 'completion: one choice per prompt, in order');
  const single = await client.completions.create({ model: MODEL, prompt: 'Two two', max_tokens: 5, temperature: 0 });
  ok(r.choices[1].text === single.choices[0].text, 'completion: choice 1 equals the prompt run alone');
  const ids = await post('/tokenize', { model: MODEL, prompt: 'Two two' });
  ok(ids.status === 200 && Array.isArray(ids.json.tokens) && ids.json.count === ids.json.tokens.length, 'tokenize: tokens and count', ids.json);
  const t = await client.completions.create({ model: MODEL, prompt: ids.json.tokens, max_tokens: 5, temperature: 0 });
  ok(t.choices[0].text === single.choices[0].text, 'completion: token-id prompt equals the text prompt');
  const tt = await client.completions.create({ model: MODEL, prompt: [ids.json.tokens, ids.json.tokens], max_tokens: 5, temperature: 0 });
  ok(tt.choices.length === 2 && tt.choices[1].text === single.choices[0].text, 'completion: array of token arrays');
  const d = await post('/detokenize', { model: MODEL, tokens: ids.json.tokens });
  ok(d.status === 200 && typeof d.json.prompt === 'string' && d.json.prompt.endsWith('Two two'), 'detokenize round trip', d.json);
  const s = await post('/v1/completions', { model: MODEL, prompt: ['a', 'b'], max_tokens: 4, temperature: 0, stream: true });
  const ev = sse(s.text);
  const idx = new Set(ev.chunks.flatMap((c) => c.choices.map((x) => x.index)));
  ok(ev.done && idx.has(0) && idx.has(1), 'completion stream: chunks of both prompts', ev.chunks.length);
});

await check('invocations', async () => {
  const a = await post('/invocations', chatBody());
  ok(a.status === 200 && a.json.object === 'chat.completion' && a.json.choices[0].message.content === chatText,
    '/invocations with messages is a chat completion');
  const b = await post('/invocations', { prompt: 'Once upon a time', max_tokens: 16, temperature: 0 });
  ok(b.status === 200 && b.json.object === 'text_completion' && b.json.choices[0].text === cmplText,
    '/invocations with prompt is a completion');
  const c = await post('/invocations', { prompt: 'Once upon a time', max_tokens: 16, temperature: 0, stream: true });
  ok(c.status === 200 && sse(c.text).done, '/invocations streams');
  const d = await post('/invocations', { input: 'x' });
  ok(d.status === 400 && isErr(d.json, 'invalid_request_error'), '/invocations without messages/prompt/inputs -> 400');
  const p = await fetch(`${BASE}/ping`, { signal: AbortSignal.timeout(10000) });
  ok(p.status === 200, '/ping -> 200 without auth');
});

await check('models', async () => {
  const list = await client.models.list();
  const m = list.data.find((x) => x.id === MODEL);
  ok(m && m.object === 'model' && Number.isInteger(m.max_model_len) && m.max_model_len > 0, '/v1/models lists the model with max_model_len', list.data);
  const one = await client.models.retrieve(MODEL);
  ok(one.id === MODEL, '/v1/models/{id}');
  const h = await fetch(`${BASE}/health`, { signal: AbortSignal.timeout(10000) });
  ok(h.status === 200 && (await h.json()).status === 'ok', '/health -> {"status":"ok"} without auth');
});

await check('errors', async () => {
  try {
    await client.chat.completions.create(chatBody({ model: 'no-such-model' }));
    ok(false, 'unknown model rejected');
  } catch (e) {
    ok(e.status === 404 && e.message.includes('The model `no-such-model` does not exist.'), 'unknown model -> 404 with the vLLM message', e.message);
  }
  try {
    await client.chat.completions.create(chatBody({ temperature: 7 }));
    ok(false, 'temperature 7 rejected');
  } catch (e) {
    ok(e.status === 400 && e.param === 'temperature' && e.type === 'invalid_request_error', 'bad temperature -> 400 param temperature', e.error);
  }
  try {
    await client.chat.completions.create(chatBody({ max_tokens: 100000000 }));
    ok(false, 'context exceeded rejected');
  } catch (e) {
    ok(e.status === 400 && e.code === 'context_length_exceeded' && /maximum context length is \d+ tokens/.test(e.message),
      'prompt + max_tokens beyond the context -> context_length_exceeded', e.error);
  }
  const bad = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: 'wrong-key', timeout: 10000, maxRetries: 0 });
  if (KEY !== 'none') {
    try {
      await bad.models.list();
      ok(false, 'wrong key rejected');
    } catch (e) {
      ok(e.status === 401 && e.code === 'invalid_api_key', 'wrong key -> 401 invalid_api_key', e.error);
    }
  }
  let r = await post('/v1/chat/completions', '{"messages": [');
  ok(r.status === 400 && isErr(r.json, 'invalid_request_error'), 'body not JSON -> 400');
  r = await post('/v1/chat/completions', chatBody({ stream_options: { include_usage: true } }));
  ok(r.status === 400 && r.json.error.param === 'stream_options', 'stream_options without stream -> 400');
  r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x/y.png' } }] }] });
  ok(r.status === 400 && r.json.error.param === 'messages[0].content[0]' &&
    /image input is not supported by this server \(it was started without --mmproj\)/.test(r.json.error.message),
    'image part to a server without --mmproj -> 400 naming the part', r.json);
  r = await post('/v1/chat/completions', chatBody({ best_of: 3 }));
  ok(r.status === 400 && r.json.error.param === 'best_of', 'unsupported sampling field -> 400 naming it');
  r = await post('/v1/chat/completions', { messages: [] });
  ok(r.status === 400 && r.json.error.param === 'messages', 'empty messages -> 400');
  r = await post('/v1/completions', { prompt: 'x', max_tokens: 'many' });
  ok(r.status === 400 && r.json.error.param === 'max_tokens', 'max_tokens wrong type -> 400');
  r = await post('/v1/completions', { prompt: [1, 99999999] });
  ok(r.status === 400 && isErr(r.json, 'invalid_request_error'), 'token id out of vocabulary -> 400', r.json);
  const nf = await fetch(`${BASE}/v1/nothing`, { headers: auth, signal: AbortSignal.timeout(10000) });
  ok(nf.status === 404 && isErr(await nf.json(), 'invalid_request_error'), 'unknown path -> 404 JSON');
  const na = await fetch(`${BASE}/v1/chat/completions`, { headers: auth, signal: AbortSignal.timeout(10000) });
  ok(na.status === 405 && na.headers.get('allow') === 'POST' && isErr(await na.json(), 'invalid_request_error'), 'wrong method -> 405 with Allow');
});

if (process.env.E2E_CONCURRENCY === '1') {
  await check('four concurrent streams', async () => {
    const run = async (i) => {
      const s = await client.completions.create({ model: MODEL, prompt: `Stream ${i}`, max_tokens: 200, temperature: 0, stream: true });
      const times = [];
      let text = '';
      for await (const ch of s) { times.push(performance.now()); text += ch.choices.map((x) => x.text).join(''); }
      return { first: times[0], last: times[times.length - 1], text };
    };
    const res = await Promise.all([0, 1, 2, 3].map(run));
    const overlap = res.every((a) => res.every((b) => a.first < b.last));
    ok(overlap, 'four streams make progress at the same time (each starts before any other ends)', res.map((r) => [r.first, r.last]));
    ok(res.every((r) => r.text.length > 0), 'four streams all produce text');
  });
}

await check('metrics', async () => {
  const m = await fetch(`${BASE}/metrics`, { headers: auth, signal: AbortSignal.timeout(10000) });
  const t = await m.text();
  for (const name of ['llm_requests_total', 'llm_num_requests_running', 'llm_num_requests_waiting', 'llm_prompt_tokens_total',
    'llm_generation_tokens_total', 'llm_time_to_first_token_seconds_bucket', 'llm_inter_token_latency_seconds_bucket', 'llm_kv_cache_usage_perc']) {
    ok(m.status === 200 && t.includes(name), `/metrics has ${name}`);
  }
});

process.exit(failed() ? 1 : 0);
