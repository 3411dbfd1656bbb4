// scripted.test.mjs - reasoning and tool calls that the model really
// generates, end to end: the official `openai` SDK through nginx to
// llm-fcgi running the REAL engine on the scripted fixture model
// (tests/fixtures/scripted_model.h). Its greedy output follows scripts
// chosen by trigger words in the prompt:
//   "weather in Paris"  reasoning, "</th"+"ink>", then <tool_call> with
//                       arguments split mid-word ("Par"+"is")
//   "<tool_response>"   (the tool result, in the template) short reasoning,
//                       "</think>", then "It is sunny in Paris."
//   "twice"             two calls in one answer ("<tool_"+"call>" the 2nd)
//   "broken"            <tool_call>{"name": oops</tool_call>
//   (none)              "Hello from the scripted model."
// With enable_thinking false the template does not open <think> and the
// model starts directly with the content part of the script.
// SUITE=model: the model's embedded template (scripted_template.jinja);
// SUITE=override: --chat-template tools_template.jinja, a subset.
// Prints TAP lines (serve_scripted.sh counts them).
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY = process.env.API_KEY || 'none';
const MODEL = process.env.MODEL;
const SUITE = process.env.SUITE || 'model';
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 30000, maxRetries: 0 });

const { ok, check, post } = harness({ prefix: `[${SUITE}] `, detailChars: 1200 });
// The prompt text the chat endpoint renders for body (control tokens such
// as <|im_start|> do not come back from /detokenize).
async function rendered(body) {
  const t = await post('/tokenize', { model: MODEL, ...body });
  const d = await post('/detokenize', { model: MODEL, tokens: t.json.tokens });
  return d.json.prompt;
}

// What the scripts emit (tests/fixtures/scripted_model.c).
const W_REASONING = 'The user asks about the weather. I will call get_weather.';
const R_REASONING = 'The tool says it is clear.';
const ANSWER = 'It is sunny in Paris.';
const D_REASONING = 'I have no tool for that.';
const D_CONTENT = 'Hello from the scripted model.';
const W_MARKUP = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const MARKUP = ['<think>', '</think>', '</th', 'ink>', '<tool_call>', '</tool_call>', '<tool_', 'call>', '<tool_response>'];
const hasMarkup = (s) => MARKUP.some((m) => s.includes(m));

const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
const tools = [weatherTool];
const qWeather = [{ role: 'user', content: 'What is the weather in Paris?' }];
const qTwice = [{ role: 'user', content: 'What is the weather in Paris and London? Call the tool twice.' }];
const qBroken = [{ role: 'user', content: 'Show me broken markup.' }];
const qHello = [{ role: 'user', content: 'Hello there.' }];
const noThink = { chat_template_kwargs: { enable_thinking: false } };
const req = (messages, extra = {}) => ({ model: MODEL, messages, tools, max_tokens: 64, temperature: 0, ...extra });

// Streams a request; folds the deltas and records what each kind carried.
async function streamed(body) {
  const s = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  const out = { reasoning: '', content: '', roleFirst: false, order: [], finish: null, usage: null, n: 0,
    markup: [], calls: [], toolDeltas: [], badToolDelta: [] };
  for await (const ch of s) {
    if (ch.usage) out.usage = ch.usage;
    if (!ch.choices.length) continue;
    const d = ch.choices[0].delta;
    if (out.n++ === 0) out.roleFirst = d.role === 'assistant';
    if (d.reasoning_content) {
      out.reasoning += d.reasoning_content; out.order.push('r');
      if (hasMarkup(d.reasoning_content)) out.markup.push(d.reasoning_content);
    }
    if (d.content) { out.content += d.content; out.order.push('c'); }
    for (const tc of d.tool_calls || []) {
      out.order.push('t');
      out.toolDeltas.push(tc);
      const f = tc.function || {};
      let c = out.calls[tc.index];
      if (!c) {
        // the first delta of a call: index, id, type, name, arguments ""
        if (!(typeof tc.id === 'string' && tc.type === 'function' && typeof f.name === 'string' && f.arguments === ''))
          out.badToolDelta.push(tc);
        c = out.calls[tc.index] = { id: tc.id, name: f.name, arguments: '', fragments: 0 };
      } else {
        if (tc.id !== undefined || f.name !== undefined || typeof f.arguments !== 'string') out.badToolDelta.push(tc);
        c.arguments += f.arguments || '';
        c.fragments++;
      }
    }
    if (ch.choices[0].finish_reason) out.finish = ch.choices[0].finish_reason;
  }
  return out;
}

const isCallId = (id) => typeof id === 'string' && /^call_[A-Za-z0-9]{24}$/.test(id);
function checkCall(c, city, what) {
  let args = null;
  try { args = JSON.parse(c.function.arguments); } catch { /* checked below */ }
  ok(isCallId(c.id) && c.type === 'function' && c.function.name === 'get_weather',
    `${what}: id "call_...", type function, name get_weather`, c);
  ok(typeof c.function.arguments === 'string' && args && args.city === city && Object.keys(args).length === 1,
    `${what}: arguments is a JSON string of {"city":"${city}"}`, c.function.arguments);
}

let firstCall = null; // the call of the weather request, sent back in the round trip

await check('the prompt', async () => {
  const p = await rendered({ messages: qWeather, tools });
  const own = p.includes('You are the scripted fixture.');
  ok(SUITE === 'model' ? own : !own, SUITE === 'model' ? "the model's embedded template renders the prompt"
    : 'the --chat-template file renders the prompt, not the embedded template', p.slice(0, 200));
  ok(p.includes('"name": "get_weather"') && p.endsWith('\nassistant\n<think>\n'),
    'the tool is in the prompt, which opens <think>', p.slice(-80));
  const p2 = await rendered({ messages: qWeather, tools, ...noThink });
  ok(p2.endsWith('\nassistant\n') && !p2.includes('<think>'),
    'enable_thinking false: the prompt does not open <think>', p2.slice(-60));
});

await check('tool call, non-streamed', async () => {
  const r = await client.chat.completions.create(req(qWeather));
  const ch = r.choices[0];
  const m = ch.message;
  ok(ch.finish_reason === 'tool_calls', 'call: finish_reason tool_calls', ch);
  ok(m.content === null, 'call: content null (nothing outside the call)', m);
  ok(m.reasoning_content === W_REASONING, 'call: reasoning_content is the reasoning, "</th"+"ink>" not in it', m);
  ok(Array.isArray(m.tool_calls) && m.tool_calls.length === 1, 'call: one tool call', m.tool_calls);
  if (m.tool_calls && m.tool_calls[0]) {
    checkCall(m.tool_calls[0], 'Paris', 'call');
    ok(m.tool_calls[0].function.arguments === '{"city":"Paris"}', 'call: arguments compact, split "Par"+"is" joined');
    firstCall = m.tool_calls[0];
  }
  const u = r.usage;
  ok(u.completion_tokens === 13 && u.completion_tokens_details.reasoning_tokens === 7,
    'call: usage 13 completion tokens, 7 of them reasoning (with the two "</think>" pieces)', u);
});

if (SUITE === 'model') await check('tool call, streamed', async () => {
  const s = await streamed(req(qWeather));
  ok(s.roleFirst, 'call streamed: the first delta carries the role');
  ok(s.reasoning === W_REASONING && s.content === '', 'call streamed: delta.reasoning_content, no delta.content', s);
  ok(s.markup.length === 0, 'call streamed: no markup in any reasoning or content delta', s.markup);
  const firstTool = s.order.indexOf('t');
  ok(firstTool > 0 && s.order.slice(0, firstTool).every((k) => k === 'r') && s.order.slice(firstTool).every((k) => k === 't'),
    'call streamed: reasoning deltas first, then tool_calls deltas', s.order);
  ok(s.calls.length === 1 && s.badToolDelta.length === 0,
    'call streamed: delta.tool_calls index 0 with id/type/name/arguments "" first, then argument fragments only',
    s.toolDeltas);
  const c = s.calls[0] || {};
  ok(isCallId(c.id) && c.name === 'get_weather' && s.toolDeltas.every((t) => t.index === 0),
    'call streamed: id "call_...", name get_weather, index 0', c);
  ok(c.arguments === '{"city":"Paris"}' && c.fragments >= 2,
    `call streamed: ${c.fragments} argument fragments concatenate to the arguments`, s.toolDeltas);
  ok(s.finish === 'tool_calls', 'call streamed: finish_reason tool_calls', s.finish);
  ok(s.usage && s.usage.completion_tokens_details && s.usage.completion_tokens_details.reasoning_tokens === 7,
    'call streamed: usage.reasoning_tokens in the usage chunk', s.usage);
});

await check('round trip: the tool result', async () => {
  const call = firstCall || { id: 'call_abc123', type: 'function',
    function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
  const q = [...qWeather, { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: '{"temperature": 22, "sky": "clear"}' }];
  const p = await rendered({ messages: q, tools });
  ok(p.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>') &&
     p.includes('<tool_response>\n{"temperature": 22, "sky": "clear"}\n</tool_response>'),
  'round trip: the call and the tool result are rendered', p.slice(-300));
  const r = await client.chat.completions.create(req(q));
  const m = r.choices[0].message;
  ok(m.content === ANSWER && m.reasoning_content === R_REASONING,
    'round trip: content "It is sunny in Paris.", reasoning_content separated', m);
  ok(Array.isArray(m.tool_calls) && m.tool_calls.length === 0 && r.choices[0].finish_reason === 'stop',
    'round trip: no tool calls, finish_reason stop', r.choices[0]);
  ok(r.usage.completion_tokens_details.reasoning_tokens === 4, 'round trip: reasoning_tokens 4', r.usage);
  if (SUITE !== 'model') return;
  const s = await streamed(req(q));
  ok(s.reasoning === R_REASONING && s.content === ANSWER, 'round trip streamed: reasoning then content, == non-streamed', s);
  const firstC = s.order.indexOf('c');
  ok(firstC > 0 && s.order.slice(0, firstC).every((k) => k === 'r') && s.order.slice(firstC).every((k) => k === 'c'),
    'round trip streamed: all delta.reasoning_content before delta.content', s.order);
  ok(s.markup.length === 0 && !hasMarkup(s.content) && s.calls.length === 0 && s.finish === 'stop',
    'round trip streamed: no markup, no tool deltas, finish_reason stop', s);
  // stop strings look at the content only: "tool" is in the reasoning
  const rs = await client.chat.completions.create(req(q, { stop: ['tool', 'sunny'] }));
  const ms = rs.choices[0].message;
  ok(ms.reasoning_content === R_REASONING && ms.content === 'It is ' && rs.choices[0].finish_reason === 'stop' &&
     rs.choices[0].stop_reason === 'sunny', 'stop strings: "tool" in the reasoning does not stop, "sunny" in the content does',
  rs.choices[0]);
});

await check('enable_thinking false', async () => {
  const r = await client.chat.completions.create(req(qWeather, noThink));
  const m = r.choices[0].message;
  ok(m.reasoning_content === null && m.content === null && m.tool_calls.length === 1 &&
     r.choices[0].finish_reason === 'tool_calls', 'thinking off: the call without reasoning', m);
  if (m.tool_calls[0]) checkCall(m.tool_calls[0], 'Paris', 'thinking off');
  ok(r.usage.completion_tokens === 6 && r.usage.completion_tokens_details.reasoning_tokens === 0,
    'thinking off: 6 completion tokens, reasoning_tokens 0', r.usage);
  const h = await client.chat.completions.create(req(qHello, noThink));
  ok(h.choices[0].message.content === D_CONTENT && h.choices[0].message.reasoning_content === null,
    'thinking off, no trigger: content only', h.choices[0].message);
  const ht = await client.chat.completions.create(req(qHello));
  ok(ht.choices[0].message.content === D_CONTENT && ht.choices[0].message.reasoning_content === D_REASONING,
    'thinking on, no trigger: reasoning_content and content', ht.choices[0].message);
  if (SUITE !== 'model') return;
  const s = await streamed(req(qWeather, noThink));
  ok(s.reasoning === '' && s.content === '' && s.calls.length === 1 && s.calls[0].arguments === '{"city":"Paris"}' &&
     s.finish === 'tool_calls', 'thinking off streamed: only tool_calls deltas', s);
});

await check('parallel tool calls', async () => {
  const r = await client.chat.completions.create(req(qTwice));
  const m = r.choices[0].message;
  ok(m.tool_calls.length === 2 && r.choices[0].finish_reason === 'tool_calls' && m.content === null,
    'parallel: two calls, content null, finish_reason tool_calls', m);
  if (m.tool_calls.length === 2) {
    checkCall(m.tool_calls[0], 'Paris', 'parallel call 0');
    checkCall(m.tool_calls[1], 'London', 'parallel call 1 ("<tool_"+"call>")');
    ok(m.tool_calls[0].id !== m.tool_calls[1].id, 'parallel: distinct ids');
  }
  const one = await client.chat.completions.create(req(qTwice, { parallel_tool_calls: false }));
  ok(one.choices[0].message.tool_calls.length === 1 &&
     JSON.parse(one.choices[0].message.tool_calls[0].function.arguments).city === 'Paris',
  'parallel_tool_calls false: only the first call', one.choices[0].message);
  if (SUITE !== 'model') return;
  const s = await streamed(req(qTwice));
  ok(s.calls.length === 2 && s.badToolDelta.length === 0 && s.toolDeltas.every((t) => t.index === 0 || t.index === 1),
    'parallel streamed: calls at indices 0 and 1, each opened with id/type/name', s.toolDeltas);
  const lastOf0 = s.toolDeltas.map((t) => t.index).lastIndexOf(0), firstOf1 = s.toolDeltas.findIndex((t) => t.index === 1);
  ok(lastOf0 < firstOf1, 'parallel streamed: call 0 is complete before call 1 starts');
  ok(s.calls.length === 2 && s.calls[0].arguments === '{"city":"Paris"}' && s.calls[1].arguments === '{"city":"London"}' &&
     s.calls[0].id !== s.calls[1].id, 'parallel streamed: arguments per index', s.calls);
  ok(s.content === '' && s.markup.length === 0 && s.finish === 'tool_calls', 'parallel streamed: no content, no markup', s);
});

if (SUITE === 'model') await check('malformed markup', async () => {
  const r = await client.chat.completions.create(req(qBroken));
  const m = r.choices[0].message;
  ok(typeof m.content === 'string' && m.content === '<tool_call>{"name": oops</tool_call>' && m.tool_calls.length === 0 &&
     r.choices[0].finish_reason === 'stop', 'malformed: returned as plain content, no tool calls, finish stop', m);
  ok(m.reasoning_content === 'I will write bad markup.', 'malformed: the reasoning is separate');
  const s = await streamed(req(qBroken));
  ok(s.content === m.content && s.calls.length === 0 && s.finish === 'stop', 'malformed streamed: the same content', s);
});

if (SUITE === 'model') await check('tools off', async () => {
  const noTools = { model: MODEL, messages: qWeather, max_tokens: 64, temperature: 0, ...noThink };
  const r = await client.chat.completions.create(noTools);
  ok(r.choices[0].message.content === W_MARKUP && r.choices[0].finish_reason === 'stop',
    'no tools in the request: the call markup is plain content', r.choices[0]);
  const n = await client.chat.completions.create(req(qWeather, { ...noThink, tool_choice: 'none' }));
  ok(n.choices[0].message.content === W_MARKUP && !(n.choices[0].message.tool_calls || []).length &&
     n.choices[0].finish_reason === 'stop', 'tool_choice none: not parsed, plain content', n.choices[0]);
});

if (SUITE === 'model') await check('concurrent requests and n', async () => {
  // different scripts decoded in the same batches (--parallel 2) stay apart
  const [w, t, b, h] = await Promise.all([
    client.chat.completions.create(req(qWeather)),
    streamed(req(qTwice)),
    client.chat.completions.create(req(qBroken)),
    streamed(req(qHello)),
  ]);
  ok(w.choices[0].message.tool_calls.length === 1 && w.choices[0].message.reasoning_content === W_REASONING &&
     t.calls.length === 2 && t.calls[1].arguments === '{"city":"London"}' &&
     b.choices[0].message.content === '<tool_call>{"name": oops</tool_call>' &&
     h.reasoning === D_REASONING && h.content === D_CONTENT,
  'four concurrent requests, each follows its own script', { w: w.choices[0].message, t: t.calls, h });
  const r = await client.chat.completions.create(req(qWeather, { n: 2 }));
  ok(r.choices.length === 2 && r.choices.every((c) => c.finish_reason === 'tool_calls' && c.message.tool_calls.length === 1 &&
     c.message.tool_calls[0].function.arguments === '{"city":"Paris"}'),
  'n 2: both choices carry the call', r.choices);
  ok(r.choices.length === 2 && r.choices[0].message.tool_calls[0].id !== r.choices[1].message.tool_calls[0].id,
    'n 2: each call has its own id');
  ok(r.usage.completion_tokens === 26 && r.usage.completion_tokens_details.reasoning_tokens === 14,
    'n 2: usage sums both choices (26 tokens, 14 reasoning)', r.usage);
});

if (SUITE === 'model') await check('sampling', async () => {
  // the script wins by ~20 logits: default sampling follows it too
  const r = await client.chat.completions.create({ model: MODEL, messages: qWeather, tools, max_tokens: 64,
    temperature: 1, top_p: 1, seed: 7 });
  const m = r.choices[0].message;
  ok(m.reasoning_content === W_REASONING && m.tool_calls.length === 1 &&
     m.tool_calls[0].function.arguments === '{"city":"Paris"}', 'temperature 1: the same script', m);
});
