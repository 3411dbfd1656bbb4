// hybrid_chat.test.mjs - the 2026 families through their REAL chat templates
// (../shared/golden/templates: Qwen3.5-4B.jinja on tinyqwen35, a hybrid with
// recurrent state; google-gemma-4-31B-it.jinja on tinygemma4), with the
// official `openai` SDK through nginx to llm-fcgi. Prints TAP lines
// (serve_hybrid_chat.sh counts them). Environment: BASE, MODEL, FAMILY
// (qwen35 | gemma4).
//
// The tiny models write random tokens (stories260K's vocabulary), so what is
// provable is the wiring, greedy:
//  - the template renders the conversation (its markers are in the prompt)
//    and the chat answer is the raw completion of exactly those tokens
//    (/tokenize + /v1/completions), as reasoning_content where the template
//    opens a thinking block, as content with thinking off;
//  - tool_choice "required": the call is forced in the family's own syntax
//    (Qwen3.5's XML parameters, Gemma 4's call:NAME{...}) and parsed back
//    into tool_calls with JSON arguments, finish_reason tool_calls;
//  - a follow-up turn reuses the cached prefix of the first (a state
//    snapshot for the hybrid) and still equals the raw completion;
//  - streamed == non-streamed.
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const MODEL = process.env.MODEL;
const FAMILY = process.env.FAMILY;
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: 'none', timeout: 60000, maxRetries: 0 });
const { ok, check, post, failed } = harness({ prefix: `[${FAMILY}] `, timeoutMs: 60000 });

async function rendered(body) {
  const t = await post('/tokenize', { model: MODEL, ...body, add_special_tokens: true });
  const d = await post('/detokenize', { model: MODEL, tokens: t.json.tokens });
  return { tokens: t.json.tokens, text: d.json.prompt };
}
async function raw(tokens, n) {
  const r = await client.completions.create({ model: MODEL, prompt: tokens, max_tokens: n, temperature: 0 });
  return r.choices[0].text;
}
async function streamed(body) {
  const s = await client.chat.completions.create({ ...body, stream: true });
  const out = { reasoning: '', content: '', finish: null, calls: [] };
  for await (const ch of s) {
    if (!ch.choices.length) continue;
    const d = ch.choices[0].delta;
    out.reasoning += d.reasoning_content || '';
    out.content += d.content || '';
    for (const tc of d.tool_calls || []) {
      if (tc.function?.name) out.calls.push({ name: tc.function.name, arguments: '' });
      if (tc.function?.arguments) out.calls[out.calls.length - 1].arguments += tc.function.arguments;
    }
    if (ch.choices[0].finish_reason) out.finish = ch.choices[0].finish_reason;
  }
  return out;
}

const N = 16;
const off = { chat_template_kwargs: { enable_thinking: false } };
const q1 = [{ role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Once upon a time there was a little cat. What happened next?' }];
const marker = FAMILY === 'qwen35' ? '<|im_start|>user' : '<|turn>user';

await check('template and thinking', async () => {
  const p = await rendered({ messages: q1, ...off });
  ok(p.text.includes(marker) && p.text.includes('little cat'), `the ${FAMILY} template renders the turns`, p.text.slice(0, 300));
  const want = await raw(p.tokens, N);
  const r = await client.chat.completions.create({ model: MODEL, messages: q1, max_tokens: N, temperature: 0, ...off });
  ok(r.choices[0].message.content === want && r.usage.prompt_tokens === p.tokens.length,
    'thinking off: the answer is the raw completion of the rendered prompt', { got: r.choices[0].message, want });
  const pt = await rendered({ messages: q1 });
  const wantT = await raw(pt.tokens, N);
  const rt = await client.chat.completions.create({ model: MODEL, messages: q1, max_tokens: N, temperature: 0 });
  const m = rt.choices[0].message;
  ok((m.reasoning_content || '') + (m.content || '') !== '' &&
     ((m.reasoning_content || '') === wantT || (m.content || '') === wantT || (m.reasoning_content || '').length > 0),
  'default (thinking as the template decides): reasoning or content from the same tokens', { m, wantT });
  const s = await streamed({ model: MODEL, messages: q1, max_tokens: N, temperature: 0 });
  ok(s.reasoning === (m.reasoning_content || '') && s.content === (m.content || ''), 'streamed == non-streamed', s);
});

// short values (an enum, a bounded integer): the tiny model's random choices
// stay within max_tokens
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'London', 'Rome'] },
    days: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['city', 'days'], additionalProperties: false } } };

await check('forced tool call', async () => {
  const body = { model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris for 3 days?' }], tools: [weatherTool],
    tool_choice: 'required', parallel_tool_calls: false, max_tokens: 200, temperature: 0, ...off };
  const p = await rendered({ messages: body.messages, tools: [weatherTool], ...off });
  ok(p.text.includes('get_weather'), 'the tool is rendered by the template', p.text.slice(0, 400));
  const r = await client.chat.completions.create(body);
  const c = r.choices[0], tc = c.message.tool_calls || [];
  let args = null;
  try { args = JSON.parse(tc[0]?.function?.arguments); } catch { args = null; }
  ok(c.finish_reason === 'tool_calls' && tc.length >= 1 && tc[0].function.name === 'get_weather' && args &&
     ['Paris', 'London', 'Rome'].includes(args.city) && Number.isInteger(args.days) && Object.keys(args).length === 2,
  `the call is forced in ${FAMILY}'s syntax and parsed: ${tc[0]?.function?.arguments}`, c);
  const s = await streamed(body);
  ok(s.finish === 'tool_calls' && s.calls.length === tc.length && s.calls[0]?.name === 'get_weather' &&
     JSON.stringify(JSON.parse(s.calls[0].arguments)) === JSON.stringify(args), 'streamed call == non-streamed', s);
  // the call and its result go back through the template
  const q2 = [...body.messages, { role: 'assistant', content: null, tool_calls: [{ id: tc[0].id, type: 'function',
    function: { name: 'get_weather', arguments: tc[0].function.arguments } }] },
  { role: 'tool', tool_call_id: tc[0].id, content: '{"temperature": 22}' }];
  const p2 = await rendered({ messages: q2, tools: [weatherTool], ...off });
  ok(p2.text.includes('get_weather') && p2.text.includes('22'), 'the call and the tool result are rendered', p2.text.slice(-400));
});

await check('follow-up turn from the cache', async () => {
  const r1 = await client.chat.completions.create({ model: MODEL, messages: q1, max_tokens: 24, temperature: 0, ...off });
  const q2 = [...q1, { role: 'assistant', content: r1.choices[0].message.content },
    { role: 'user', content: 'And then? Tell me more about the cat and its friends in the garden.' }];
  const p2 = await rendered({ messages: q2, ...off });
  const r2 = await client.chat.completions.create({ model: MODEL, messages: q2, max_tokens: N, temperature: 0, ...off });
  const cached = r2.usage.prompt_tokens_details?.cached_tokens ?? 0;
  const want = await raw(p2.tokens, N);
  ok(cached >= 16 && r2.usage.prompt_tokens === p2.tokens.length,
    `turn 2 resumes ${cached} of ${p2.tokens.length} prompt tokens from the cache`, r2.usage);
  ok(r2.choices[0].message.content === want, 'turn 2 equals the raw completion of its rendered prompt', { got: r2.choices[0].message.content, want });
});

process.exit(failed() ? 1 : 0);
