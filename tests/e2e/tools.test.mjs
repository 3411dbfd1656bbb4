// tools.test.mjs - chat templates, reasoning_content and tools end to end:
// the official `openai` SDK through nginx to llm-fcgi running the REAL engine
// on stories260K.gguf with --chat-template tests/e2e/tools_template.jinja
// (the server detects the qwen3 reasoning parser and the hermes tool-call
// parser from it). Prints TAP lines (serve_tools.sh counts them).
//
// stories260K writes children's stories, never <think> or <tool_call>
// markup, so what is provable here is the wiring, with greedy decoding:
//  - the template opens <think> (enable_thinking default): the whole answer
//    comes back as reasoning_content, streamed (delta.reasoning_content,
//    no delta.content) and not, equal to the raw completion of the same
//    prompt tokens (/tokenize + /v1/completions), reasoning_tokens counted;
//  - chat_template_kwargs {enable_thinking:false}: the same text is content;
//  - a tools round trip: tools rendered into the prompt, the assistant's
//    tool_calls (content null, arguments a JSON string given to the template
//    as an object) and the tool result (tool_call_id) rendered, the answer
//    returned as content with tool_calls [] and never finish_reason
//    tool_calls; streamed == non-streamed;
//  - stop strings match the content, not the reasoning;
//  - developer -> system, continue_final_message, and the 400s.
// Call detection and markup handling are covered by tests/unit/
// test_chat_output (real vocab tokens through the same code).
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY = process.env.API_KEY || 'none';
const MODEL = process.env.MODEL;
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 30000, maxRetries: 0 });

const { ok, check, post } = harness();

// The prompt the chat endpoint builds (tokens, with BOS as chat adds it) and
// its text; then the raw greedy completion of exactly those tokens.
async function rendered(body) {
  const t = await post('/tokenize', { model: MODEL, ...body, add_special_tokens: true });
  const d = await post('/detokenize', { model: MODEL, tokens: t.json.tokens });
  return { tokens: t.json.tokens, text: d.json.prompt };
}
async function rawCompletion(tokens, maxTokens) {
  const r = await client.completions.create({ model: MODEL, prompt: tokens, max_tokens: maxTokens, temperature: 0 });
  return { text: r.choices[0].text, finish: r.choices[0].finish_reason };
}
// Streams a chat request; returns the deltas folded.
async function streamed(body) {
  const s = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  const out = { reasoning: '', content: '', roleFirst: false, order: [], finish: null, usage: null, calls: 0, n: 0 };
  for await (const ch of s) {
    if (ch.usage) out.usage = ch.usage;
    if (!ch.choices.length) continue;
    const d = ch.choices[0].delta;
    if (out.n++ === 0) out.roleFirst = d.role === 'assistant';
    if (d.reasoning_content) { out.reasoning += d.reasoning_content; out.order.push('r'); }
    if (d.content) { out.content += d.content; out.order.push('c'); }
    if (d.tool_calls) out.calls++;
    if (ch.choices[0].finish_reason) out.finish = ch.choices[0].finish_reason;
  }
  return out;
}

const N = 16;
const story = [{ role: 'user', content: 'Once upon a time there was a little cat.' }];
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

await check('reasoning (template opens <think>)', async () => {
  const body = { model: MODEL, messages: story, max_tokens: N, temperature: 0 };
  const p = await rendered({ messages: story });
  ok(p.text.trimEnd().endsWith('<think>'), 'the generation prompt opens <think>', p.text.slice(-40));
  const raw = await rawCompletion(p.tokens, N);
  const r = await client.chat.completions.create(body);
  const m = r.choices[0].message;
  ok(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 0, 'reasoning: message.reasoning_content', m);
  ok(m.reasoning_content === raw.text, 'reasoning: reasoning_content == the raw completion of the same prompt tokens',
    { reasoning: m.reasoning_content, raw: raw.text });
  ok(m.content === null, 'reasoning: content null (nothing after the reasoning)', m.content);
  ok(Array.isArray(m.tool_calls) && m.tool_calls.length === 0, 'reasoning: tool_calls []');
  ok(r.choices[0].finish_reason === raw.finish, `reasoning: finish_reason ${raw.finish} as the raw completion`);
  const rt = r.usage.completion_tokens_details && r.usage.completion_tokens_details.reasoning_tokens;
  const eos = raw.finish === 'stop' ? 1 : 0;
  ok(rt === r.usage.completion_tokens - eos, `reasoning: usage.completion_tokens_details.reasoning_tokens ${rt}`, r.usage);
  const s = await streamed(body);
  ok(s.roleFirst, 'reasoning streamed: first delta carries the role');
  ok(s.reasoning === m.reasoning_content && s.content === '', 'reasoning streamed: delta.reasoning_content == non-streamed, no delta.content', s);
  ok(s.order.length > 1 && s.order.every((k) => k === 'r'), `reasoning streamed: ${s.order.length} reasoning chunks`);
  ok(s.finish === r.choices[0].finish_reason, 'reasoning streamed: same finish_reason');
  ok(s.usage && s.usage.completion_tokens_details && s.usage.completion_tokens_details.reasoning_tokens === rt,
    'reasoning streamed: usage.reasoning_tokens in the usage chunk', s.usage);
});

await check('thinking off (chat_template_kwargs)', async () => {
  const kw = { chat_template_kwargs: { enable_thinking: false } };
  const body = { model: MODEL, messages: story, max_tokens: N, temperature: 0, ...kw };
  const p = await rendered({ messages: story, ...kw });
  ok(!p.text.includes('<think>'), 'enable_thinking false reaches the template (no <think> in the prompt)');
  const raw = await rawCompletion(p.tokens, N);
  const r = await client.chat.completions.create(body);
  const m = r.choices[0].message;
  ok(m.content === raw.text && m.reasoning_content === null, 'thinking off: content == raw completion, reasoning_content null',
    { m, raw: raw.text });
  ok(r.usage.completion_tokens_details.reasoning_tokens === 0, 'thinking off: reasoning_tokens 0');
  const s = await streamed(body);
  ok(s.content === m.content && s.reasoning === '' && s.order.every((k) => k === 'c'),
    'thinking off streamed: only delta.content, == non-streamed', s);
});

await check('stop strings look at the content only', async () => {
  const body = { model: MODEL, messages: story, max_tokens: N, temperature: 0 };
  const r = await client.chat.completions.create(body);
  const words = r.choices[0].message.reasoning_content.split(/\s+/).filter((w) => w.length >= 2);
  const stop = words[Math.min(2, words.length - 1)];
  const rs = await client.chat.completions.create({ ...body, stop: [stop] });
  ok(rs.choices[0].message.reasoning_content === r.choices[0].message.reasoning_content &&
     rs.choices[0].finish_reason === r.choices[0].finish_reason,
     `stop '${stop}' inside the reasoning does not stop it`, rs.choices[0]);
  const kw = { chat_template_kwargs: { enable_thinking: false } };
  const plain = await client.chat.completions.create({ ...body, ...kw });
  const cw = plain.choices[0].message.content.split(/\s+/).filter((w) => w.length >= 2);
  const stop2 = cw[Math.min(2, cw.length - 1)];
  const rc = await client.chat.completions.create({ ...body, ...kw, stop: [stop2] });
  const want = plain.choices[0].message.content.slice(0, plain.choices[0].message.content.indexOf(stop2));
  ok(rc.choices[0].finish_reason === 'stop' && rc.choices[0].stop_reason === stop2 &&
     (rc.choices[0].message.content || '') === want, `stop '${stop2}' in the content stops it`, rc.choices[0]);
});

await check('tools round trip', async () => {
  const kw = { chat_template_kwargs: { enable_thinking: false } };
  const q1 = [{ role: 'user', content: 'What is the weather in Paris?' }];
  // 1. the request with tools: the tool reaches the template
  const p1 = await rendered({ messages: q1, tools: [weatherTool], ...kw });
  ok(p1.text.includes('"name": "get_weather"') && p1.text.includes('"required": ["city"]'),
    'tools: the tool and its JSON schema are rendered by the template', p1.text.slice(0, 300));
  const raw1 = await rawCompletion(p1.tokens, N);
  const r1 = await client.chat.completions.create({ model: MODEL, messages: q1, tools: [weatherTool],
    tool_choice: 'auto', max_tokens: N, temperature: 0, ...kw });
  const m1 = r1.choices[0].message;
  ok(m1.content === raw1.text && Array.isArray(m1.tool_calls) && m1.tool_calls.length === 0,
    'tools: an answer without a call is content (== raw completion), tool_calls []', { m1, raw: raw1.text });
  ok(r1.choices[0].finish_reason !== 'tool_calls', `tools: finish_reason ${r1.choices[0].finish_reason} (no call)`);
  // 2. the assistant's call and the tool's result go back
  const q2 = [...q1,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc123', type: 'function',
      function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_abc123', content: '{"temperature": 22, "sky": "clear"}' }];
  const p2 = await rendered({ messages: q2, tools: [weatherTool], ...kw });
  ok(p2.text.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
    'round trip: the call is rendered with its arguments as an object (not a quoted string)', p2.text);
  ok(p2.text.includes('<tool_response>\n{"temperature": 22, "sky": "clear"}\n</tool_response>'),
    'round trip: the tool result is rendered', p2.text);
  const raw2 = await rawCompletion(p2.tokens, N);
  const body2 = { model: MODEL, messages: q2, tools: [weatherTool], max_tokens: N, temperature: 0, ...kw };
  const r2 = await client.chat.completions.create(body2);
  const m2 = r2.choices[0].message;
  ok(m2.content === raw2.text && m2.tool_calls.length === 0, 'round trip: the answer after the tool result', { m2, raw: raw2.text });
  const s2 = await streamed(body2);
  ok(s2.content === m2.content && s2.calls === 0 && s2.finish === r2.choices[0].finish_reason,
    'round trip streamed == non-streamed', s2);
  // 3. parallel_tool_calls / named tool_choice are accepted
  const r3 = await client.chat.completions.create({ model: MODEL, messages: q1, tools: [weatherTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
    max_tokens: 4, temperature: 0, ...kw });
  ok(r3.choices[0].message.role === 'assistant', 'named tool_choice and parallel_tool_calls false are accepted');
});

await check('roles and template switches', async () => {
  const dev = await rendered({ messages: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] });
  ok(dev.text.includes('<|im_start|>system\nBe brief.') && !dev.text.includes('developer'),
    'developer is given to a template that does not know it as system', dev.text);
  const cont = [{ role: 'user', content: 'Tell a story.' }, { role: 'assistant', content: 'Once upon a time' }];
  const pc = await rendered({ messages: cont, continue_final_message: true, add_generation_prompt: false });
  ok(pc.text.endsWith('<|im_start|>assistant\nOnce upon a time'), 'continue_final_message: the prompt ends inside the last message', pc.text.slice(-60));
  const rc = await client.chat.completions.create({ model: MODEL, messages: cont, continue_final_message: true,
    add_generation_prompt: false, max_tokens: 8, temperature: 0, chat_template_kwargs: { enable_thinking: false } });
  const rawc = await rawCompletion(pc.tokens, 8);
  ok(rc.choices[0].message.content === rawc.text, 'continue_final_message: the continuation', { got: rc.choices[0].message.content, raw: rawc.text });
});

const bad = async (name, body, param, msgPart) => {
  await check(name, async () => {
    const r = await post('/v1/chat/completions', { model: MODEL, max_tokens: 4, ...body });
    const e = r.json && r.json.error;
    ok(r.status === 400 && e && e.type === 'invalid_request_error' && (param === undefined || e.param === param) &&
       (!msgPart || e.message.includes(msgPart)), `400: ${name}`, r.json);
  });
};
const hi = [{ role: 'user', content: 'hi' }];
await bad('empty tools', { messages: hi, tools: [] }, 'tools');
await bad('tool_choice naming an unknown function', { messages: hi, tools: [weatherTool],
  tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice');
await bad('tool_choice without tools', { messages: hi, tool_choice: 'required' }, 'tool_choice');
await bad('tool message without tool_call_id', { messages: [...hi, { role: 'tool', content: 'x' }] }, 'messages[1].tool_call_id');
await bad('add_generation_prompt and continue_final_message', { messages: [...hi, { role: 'assistant', content: 'a' }],
  continue_final_message: true }, 'continue_final_message');
await bad("the template's raise_exception", { messages: [{ role: 'tool', tool_call_id: 'c', content: 'x' }] }, undefined,
  'Conversation cannot start with a tool message');
// the SDK surfaces the same 400 as an exception
await check('SDK BadRequestError', async () => {
  try {
    await client.chat.completions.create({ model: MODEL, messages: hi, tools: [] });
    ok(false, 'SDK: empty tools rejected');
  } catch (e) {
    ok(e.status === 400 && e.param === 'tools', 'SDK: empty tools -> BadRequestError param tools', e.message);
  }
});
