// agents.test.mjs - the agent APIs end to end with the official clients:
// `openai` (client.responses.*) and `@anthropic-ai/sdk` (client.messages.*)
// through nginx to llm-fcgi running the REAL engine on the scripted fixture
// model (tests/fixtures/scripted_model.h: <think> reasoning and hermes
// <tool_call> markup chosen by trigger words, see scripted.test.mjs).
//
// PHASE=main     everything: Responses (plain, streamed, tool round trip
//                with function_call_output and previous_response_id,
//                text.format json_schema, reasoning, retrieve / input_items
//                / delete, background and cancel, key scoping, errors) and
//                Messages (create, stream, thinking, tool round trip,
//                stop_sequences, max_tokens, count_tokens, errors, auth);
//                writes ids to STATE for the later phases
// PHASE=restart  after a restart (or kill -9) of the server: the stored
//                responses of STATE are there and continue
// PHASE=chain    a conversation of several turns (two backends behind one
//                nginx take turns; store_pg.sh checks both served)
// PHASE=scoping  key scoping only (KEY_A created, KEY_B must not see)
// PHASE=ids      the responses of the last chain are readable and continue
// PHASE=fuzz     mutated bodies through nginx (200 or a 4xx in shape, still up)
// Environment: BASE, KEY_A, KEY_B, MODEL, STATE, PREFIX. Prints TAP lines.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { readFileSync, writeFileSync } from 'node:fs';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY_A = process.env.KEY_A;
const KEY_B = process.env.KEY_B;
const MODEL = process.env.MODEL || 'scripted';
const PHASE = process.env.PHASE || 'main';
const STATE = process.env.STATE;
const { ok, check } = harness({ prefix: process.env.PREFIX || `[${PHASE}] `, detailChars: 1500 });

const oa = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY_A, timeout: 60000, maxRetries: 0 });
const ob = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY_B, timeout: 60000, maxRetries: 0 });
const an = new Anthropic({ baseURL: BASE, apiKey: KEY_A, timeout: 60000, maxRetries: 0 });

// What the scripts emit (tests/fixtures/scripted_model.c).
const W_REASONING = 'The user asks about the weather. I will call get_weather.';
const R_REASONING = 'The tool says it is clear.';
const ANSWER = 'It is sunny in Paris.';
const D_REASONING = 'I have no tool for that.';
const D_CONTENT = 'Hello from the scripted model.';
const MARKUP = /<\/?think>|<\/?tool_call>|<tool_response>/;

const weather = { type: 'function', name: 'get_weather', description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true };
const aWeather = { name: 'get_weather', description: 'Current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const base = { model: MODEL, temperature: 0 };

async function raw(method, path, body, headers = {}) {
  const r = await fetch(`${BASE}${path}`, {
    method, headers: { 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(60000),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, text, json, headers: r.headers };
}
const bearer = (k) => ({ Authorization: `Bearer ${k}` });
const texts = (resp, type) => resp.output.filter((o) => o.type === type);
// the text of the message items (the SDK adds output_text on create only)
const outText = (resp) => texts(resp, 'message').map((m) => m.content.map((c) => c.text || '').join('')).join('');
const reasoningOf = (resp) => texts(resp, 'reasoning').map((o) => (o.content || []).map((c) => c.text).join('')).join('');
async function status(fn) {
  try { await fn(); return 0; } catch (e) { return e.status || -1; }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------ Responses

async function responsesMain(state) {
  await check('responses: plain', async () => {
    const r = await oa.responses.create({ ...base, input: 'Hello there.', max_output_tokens: 64 });
    ok(r.object === 'response' && /^resp_/.test(r.id) && r.status === 'completed', 'plain: a completed response', r);
    ok(outText(r) === D_CONTENT, 'plain: output_text is the answer', outText(r));
    ok(reasoningOf(r) === D_REASONING, 'plain: a reasoning item with the model\'s reasoning text', r.output);
    ok(r.output.map((o) => o.type).join() === 'reasoning,message', 'plain: items reasoning, message', r.output);
    const m = texts(r, 'message')[0];
    ok(m.role === 'assistant' && m.status === 'completed' && m.content[0].type === 'output_text' && /^msg_/.test(m.id),
      'plain: the message item', m);
    const u = r.usage;
    ok(u.input_tokens > 0 && u.output_tokens > 0 && u.total_tokens === u.input_tokens + u.output_tokens &&
      u.output_tokens_details.reasoning_tokens > 0 && u.output_tokens_details.reasoning_tokens < u.output_tokens &&
      typeof u.input_tokens_details.cached_tokens === 'number', 'plain: usage with cached and reasoning tokens', u);
    ok(!MARKUP.test(JSON.stringify(r.output)), 'plain: no markup in the output', r.output);
    ok(r.store === true && r.model === MODEL && r.max_output_tokens === 64 && r.temperature === 0 &&
      r.text.format.type === 'text' && r.tool_choice === 'auto' && Array.isArray(r.tools),
    'plain: the request fields echoed', r);
    state.plain = r.id;
    state.plainText = outText(r);
  });

  await check('responses: streamed', async () => {
    const s = await oa.responses.create({ ...base, input: 'Hello there.', max_output_tokens: 64, stream: true });
    const types = [];
    const seqs = [];
    let text = '', reasoning = '', done = '', final = null;
    for await (const ev of s) {
      types.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.reasoning_text.delta') reasoning += ev.delta;
      if (ev.type === 'response.output_text.done') done = ev.text;
      if (ev.type === 'response.completed') final = ev.response;
    }
    ok(types[0] === 'response.created' && types[1] === 'response.in_progress' && types.at(-1) === 'response.completed',
      'streamed: created, in_progress ... completed', types);
    ok(seqs.every((n, i) => n === i), 'streamed: sequence_number counts 0, 1, 2, ...', seqs);
    const want = ['response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta',
      'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done'];
    const seen = types.filter((t, i) => i === 0 || t !== types[i - 1]).slice(2, -1);
    ok(JSON.stringify(seen) === JSON.stringify(want), 'streamed: the events of a reasoning item then a message', seen);
    ok(text === D_CONTENT && done === D_CONTENT && reasoning === D_REASONING, 'streamed: deltas add up', { text, reasoning });
    ok(final && final.status === 'completed' && final.output.length === 2 &&
      final.output[1].content[0].text === D_CONTENT && final.usage.output_tokens > 0,
    'streamed: response.completed carries the whole response', final);
    // the helper the SDK has for streams
    const st = oa.responses.stream({ ...base, input: 'Hello there.', max_output_tokens: 64 });
    const fr = await st.finalResponse();
    ok(outText(fr) === state.plainText, 'streamed: responses.stream().finalResponse() = the non-streamed text',
      outText(fr));
    const got = await oa.responses.retrieve(final.id);
    ok(outText(got) === D_CONTENT && got.status === 'completed', 'streamed: stored too (retrieve)', got);
  });

  await check('responses: function tool round trip', async () => {
    const r1 = await oa.responses.create({ ...base, input: 'What is the weather in Paris?', tools: [weather] });
    const calls = texts(r1, 'function_call');
    ok(calls.length === 1 && calls[0].name === 'get_weather' && JSON.parse(calls[0].arguments).city === 'Paris' &&
      /^fc_/.test(calls[0].id) && typeof calls[0].call_id === 'string' && calls[0].status === 'completed',
    'tools: a function_call item with JSON arguments', r1.output);
    ok(reasoningOf(r1) === W_REASONING, 'tools: the reasoning before the call', r1.output);
    const r2 = await oa.responses.create({ ...base, previous_response_id: r1.id, tools: [weather],
      input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: '{"sky": "clear"}' }] });
    ok(outText(r2) === ANSWER && reasoningOf(r2) === R_REASONING && r2.previous_response_id === r1.id,
      'tools: function_call_output after previous_response_id -> the answer', r2);
    ok(r2.usage.input_tokens_details.cached_tokens > 0,
      'tools: the continuation hits the prefix cache (cached_tokens > 0)', r2.usage);
    const items = await oa.responses.inputItems.list(r2.id, { order: 'asc' });
    const types = items.data.map((i) => i.type).join();
    ok(types === 'message,reasoning,function_call,function_call_output' && items.data.every((i) => i.id),
      'tools: input_items is the whole conversation (earlier input, the output, the new input), with ids', items.data);
    state.toolCall = { id: r1.id, call_id: calls[0].call_id };
    // the same conversation sent in full, without the store
    const r3 = await oa.responses.create({ ...base, store: false, tools: [weather],
      input: [{ role: 'user', content: 'What is the weather in Paris?' }, ...r1.output,
        { type: 'function_call_output', call_id: calls[0].call_id, output: '{"sky": "clear"}' }] });
    ok(outText(r3) === ANSWER && r3.store === false, 'tools: the same round trip with the items sent back', r3);
    ok(await status(() => oa.responses.retrieve(r3.id)) === 404, 'tools: store false keeps nothing (404)');
  });

  await check('responses: streamed function call', async () => {
    const s = await oa.responses.create({ ...base, input: 'What is the weather in Paris?', tools: [weather], stream: true });
    let args = '', done = null, item = null;
    for await (const ev of s) {
      if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      if (ev.type === 'response.function_call_arguments.done') done = ev;
      if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') item = ev.item;
    }
    ok(done && done.arguments === args && JSON.parse(args).city === 'Paris' && item && item.arguments === args &&
      item.name === 'get_weather', 'streamed call: argument deltas add up to the done event and the item', { args, done, item });
  });

  await check('responses: text.format json_schema', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, temp: { type: 'integer' } },
      required: ['city', 'temp'], additionalProperties: false };
    const r = await oa.responses.create({ ...base, input: 'What is the weather in Paris? Answer in JSON.',
      max_output_tokens: 300, text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } } });
    let v = null;
    try { v = JSON.parse(outText(r)); } catch { /* checked below */ }
    ok(r.status === 'completed' && v && typeof v.city === 'string' && v.city.length <= 12 && Number.isInteger(v.temp) &&
      Object.keys(v).sort().join() === 'city,temp', 'json_schema: the answer is JSON valid for the schema', outText(r));
    ok(r.text.format.type === 'json_schema' && r.text.format.name === 'weather', 'json_schema: echoed in text.format');
  });

  await check('responses: incomplete', async () => {
    const r = await oa.responses.create({ ...base, input: 'Hello there.', max_output_tokens: 3 });
    ok(r.status === 'incomplete' && r.incomplete_details && r.incomplete_details.reason === 'max_output_tokens' &&
      r.usage.output_tokens === 3, 'incomplete: cut by max_output_tokens', r);
  });

  await check('responses: retrieve, input_items, delete', async () => {
    const got = await oa.responses.retrieve(state.plain);
    ok(got.id === state.plain && outText(got) === state.plainText, 'retrieve: the stored response', got);
    const items = await oa.responses.inputItems.list(state.plain);
    ok(items.data.length === 1 && items.data[0].role === 'user' && items.data[0].content[0].text === 'Hello there.',
      'input_items: the input message', items.data);
    const r = await oa.responses.create({ ...base, input: 'Hello there.', max_output_tokens: 64 });
    await oa.responses.del(r.id);
    ok(await status(() => oa.responses.retrieve(r.id)) === 404, 'delete: then 404');
    ok(await status(() => oa.responses.del(r.id)) === 404, 'delete again: 404');
  });

  await check('responses: background and cancel', async () => {
    const r = await oa.responses.create({ ...base, input: 'Hello there.', background: true, max_output_tokens: 64 });
    ok(r.status === 'queued' && r.background === true, 'background: answered at once, queued', r);
    let got = r;
    for (let i = 0; i < 100 && (got.status === 'queued' || got.status === 'in_progress'); i++) {
      await sleep(100);
      got = await oa.responses.retrieve(r.id);
    }
    ok(got.status === 'completed' && outText(got) === D_CONTENT, 'background: completed in the store', got);
    const long = await oa.responses.create({ ...base, input: 'Hello there.', background: true,
      max_output_tokens: 1500, ignore_eos: true });
    await sleep(500);
    await oa.responses.cancel(long.id);
    got = await oa.responses.retrieve(long.id);
    ok(got.status === 'cancelled' && got.usage === null, 'cancel: a running background response is cancelled', got);
    const bad = await raw('POST', `/v1/responses/${state.plain}/cancel`, undefined, bearer(KEY_A));
    ok(bad.status === 400 && bad.json && bad.json.error.type === 'invalid_request_error',
      'cancel: a response that was not background -> 400', bad.text);
  });

  await scoping(state.plain);

  await check('responses: bad input', async () => {
    const cases = [
      [{ model: MODEL, input: 7 }, 400, 'input'],
      [{ model: MODEL }, 400, 'input'],
      [{ model: MODEL, input: [{ type: 'computer_call' }] }, 400, 'input[0]'],
      [{ model: MODEL, input: [{ role: 'user', content: [{ type: 'input_text' }] }] }, 400, 'input[0].content[0]'],
      [{ model: MODEL, input: 'x', tools: [{ type: 'web_search' }] }, 400, 'tools[0]'],
      [{ model: MODEL, input: 'x', max_output_tokens: 'many' }, 400, 'max_output_tokens'],
      [{ model: MODEL, input: 'x', previous_response_id: 'resp_doesnotexist' }, 400, 'previous_response_id'],
      [{ model: 'nope', input: 'x' }, 404, 'model'],
    ];
    for (const [body, st, param] of cases) {
      const r = await raw('POST', '/v1/responses', body, bearer(KEY_A));
      ok(r.status === st && r.json && r.json.error && r.json.error.param === param && r.json.error.message &&
        r.json.error.type === 'invalid_request_error', `bad input ${JSON.stringify(body).slice(0, 80)} -> ${st} ${param}`,
      r.text);
    }
    const nf = await raw('GET', '/v1/responses/resp_doesnotexist', undefined, bearer(KEY_A));
    ok(nf.status === 404 && nf.json.error.type === 'invalid_request_error', 'unknown id -> 404', nf.text);
    const e = await status(() => oa.responses.create({ ...base, input: 'x', previous_response_id: 'resp_nope' }));
    ok(e === 400, 'the SDK sees an unknown previous_response_id as 400', e);
  });
}

async function scoping(id) {
  await check('responses: key scoping', async () => {
    ok(await status(() => ob.responses.retrieve(id)) === 404, 'scoping: another key cannot retrieve (404)');
    ok(await status(() => ob.responses.inputItems.list(id)) === 404, 'scoping: nor list its input items (404)');
    ok(await status(() => ob.responses.del(id)) === 404, 'scoping: nor delete it (404)');
    const r = await raw('POST', '/v1/responses', { model: MODEL, input: 'Hi', previous_response_id: id }, bearer(KEY_B));
    ok(r.status === 400 && r.json.error.code === 'previous_response_not_found',
      'scoping: nor continue it (previous_response_not_found)', r.text);
    const mine = await oa.responses.retrieve(id);
    ok(mine.id === id, 'scoping: the creating key still can');
  });
}

// ------------------------------------------------------------ Messages

async function messagesMain() {
  const hello = [{ role: 'user', content: 'Hello there.' }];
  await check('messages: plain, thinking', async () => {
    const m = await an.messages.create({ ...base, max_tokens: 1100, messages: hello,
      thinking: { type: 'enabled', budget_tokens: 1024 } });
    ok(m.type === 'message' && m.role === 'assistant' && /^msg_/.test(m.id) && m.model === MODEL,
      'thinking: a message', m);
    ok(m.content.length === 2 && m.content[0].type === 'thinking' && m.content[0].thinking === D_REASONING &&
      typeof m.content[0].signature === 'string' && m.content[0].signature.length > 0 &&
      m.content[1].type === 'text' && m.content[1].text === D_CONTENT, 'thinking: a thinking block then the text', m.content);
    ok(m.stop_reason === 'end_turn' && m.stop_sequence === null, 'thinking: stop_reason end_turn', m);
    ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 0 && m.usage.output_tokens > 0, 'thinking: usage', m.usage);
    const n = await an.messages.create({ ...base, max_tokens: 64, messages: hello });
    ok(n.content.length === 1 && n.content[0].type === 'text' && n.content[0].text === D_CONTENT,
      'no thinking: the template does not open it, text only', n.content);
    const c = await an.messages.countTokens({ model: MODEL, messages: hello });
    ok(c.input_tokens === n.usage.input_tokens + n.usage.cache_read_input_tokens,
      'count_tokens: the prompt tokens of the same request', { c, u: n.usage });
  });

  await check('messages: streamed', async () => {
    const s = an.messages.stream({ ...base, max_tokens: 1100, messages: hello,
      thinking: { type: 'enabled', budget_tokens: 1024 } });
    const types = [];
    let text = '', thinking = '';
    s.on('streamEvent', (ev) => types.push(ev.type));
    s.on('text', (t) => { text += t; });
    s.on('thinking', (t) => { thinking += t; });
    const m = await s.finalMessage();
    ok(types[0] === 'message_start' && types.at(-1) === 'message_stop' && types.at(-2) === 'message_delta',
      'stream: message_start ... message_delta, message_stop', types);
    ok(types.filter((t) => t === 'content_block_start').length === 2 &&
      types.filter((t) => t === 'content_block_stop').length === 2, 'stream: two blocks', types);
    const r = await raw('POST', '/v1/messages', { ...base, max_tokens: 64, messages: hello, stream: true },
      { 'x-api-key': KEY_A });
    const names = r.text.split('\n').filter((l) => l.startsWith('event: ')).map((l) => l.slice(7));
    const datas = r.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    ok(r.status === 200 && r.headers.get('content-type').startsWith('text/event-stream') && names[1] === 'ping' &&
      names.length === datas.length && names.every((n, i) => datas[i].type === n),
    'stream: every event named as its type, a ping after message_start', names);
    ok(text === D_CONTENT && thinking === D_REASONING, 'stream: text and thinking deltas', { text, thinking });
    ok(m.content[0].type === 'thinking' && m.content[0].signature.length > 0 && m.content[1].text === D_CONTENT &&
      m.stop_reason === 'end_turn' && m.usage.output_tokens > 0, 'stream: finalMessage', m);
  });

  await check('messages: tool use round trip', async () => {
    const q = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const m1 = await an.messages.create({ ...base, max_tokens: 1100, messages: q, tools: [aWeather],
      thinking: { type: 'enabled', budget_tokens: 1024 } });
    const use = m1.content.find((b) => b.type === 'tool_use');
    ok(m1.stop_reason === 'tool_use' && use && use.name === 'get_weather' && use.input.city === 'Paris' &&
      typeof use.id === 'string', 'tools: a tool_use block, stop_reason tool_use', m1);
    ok(m1.content[0].type === 'thinking' && m1.content[0].thinking === W_REASONING, 'tools: thinking first', m1.content);
    const m2 = await an.messages.create({ ...base, max_tokens: 1100, tools: [aWeather],
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [...q, { role: 'assistant', content: m1.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'clear sky' }] }] });
    const t = m2.content.find((b) => b.type === 'text');
    ok(t && t.text === ANSWER && m2.stop_reason === 'end_turn', 'tools: the tool_result answered', m2);
    // streamed: input_json_delta
    const s = an.messages.stream({ ...base, max_tokens: 64, messages: q, tools: [aWeather],
      tool_choice: { type: 'tool', name: 'get_weather' } });
    let partial = '';
    s.on('inputJson', (p) => { partial += p; });
    const m3 = await s.finalMessage();
    const u3 = m3.content.find((b) => b.type === 'tool_use');
    ok(u3 && u3.input.city === 'Paris' && JSON.parse(partial).city === 'Paris' && m3.stop_reason === 'tool_use',
      'tools: streamed input_json_delta, tool_choice tool', { partial, content: m3.content });
  });

  await check('messages: stop_sequences, max_tokens', async () => {
    const m = await an.messages.create({ ...base, max_tokens: 64, messages: hello, stop_sequences: ['scripted'] });
    ok(m.content[0].text === 'Hello from the ' && m.stop_reason === 'stop_sequence' && m.stop_sequence === 'scripted',
      'stop_sequences: cut, stop_reason stop_sequence', m);
    const k = await an.messages.create({ ...base, max_tokens: 2, messages: hello });
    ok(k.stop_reason === 'max_tokens' && k.usage.output_tokens === 2, 'max_tokens: stop_reason max_tokens', k);
    const p = await an.messages.create({ ...base, max_tokens: 64,
      messages: [...hello, { role: 'assistant', content: 'Hello from' }] });
    const pc = await an.messages.countTokens({ model: MODEL, messages: [...hello,
      { role: 'assistant', content: 'Hello from' }] });
    const hc = await an.messages.countTokens({ model: MODEL, messages: hello });
    ok(p.usage.input_tokens + p.usage.cache_read_input_tokens === pc.input_tokens && pc.input_tokens > hc.input_tokens &&
      !p.content.some((b) => b.type === 'text' && b.text.startsWith('Hello from')),
    'prefill: a last assistant message is continued (its text in the prompt, not repeated)', { p, pc, hc });
  });

  await check('messages: errors in Anthropic\'s shape', async () => {
    const hdr = { 'x-api-key': KEY_A, 'anthropic-version': '2023-06-01' };
    const shape = (r, st, type) => r.status === st && r.json && r.json.type === 'error' && r.json.error &&
      r.json.error.type === type && typeof r.json.error.message === 'string' && r.json.error.message.length > 0;
    let r = await raw('POST', '/v1/messages', { model: MODEL, messages: hello }, hdr);
    ok(shape(r, 400, 'invalid_request_error') && /max_tokens/.test(r.json.error.message), 'missing max_tokens -> 400', r.text);
    r = await raw('POST', '/v1/messages', { model: MODEL, max_tokens: 5, messages: 'hi' }, hdr);
    ok(shape(r, 400, 'invalid_request_error'), 'messages not an array -> 400', r.text);
    r = await raw('POST', '/v1/messages', { model: MODEL, max_tokens: 5, messages: [{ role: 'user',
      content: [{ type: 'video' }] }] }, hdr);
    ok(shape(r, 400, 'invalid_request_error'), 'unknown block type -> 400', r.text);
    r = await raw('POST', '/v1/messages', { model: 'claude-nope', max_tokens: 5, messages: hello }, hdr);
    ok(shape(r, 404, 'not_found_error'), 'unknown model -> 404 not_found_error', r.text);
    r = await raw('POST', '/v1/messages', { model: MODEL, max_tokens: 5, messages: hello }, { 'x-api-key': 'wrong' });
    ok(shape(r, 401, 'authentication_error'), 'wrong x-api-key -> 401 authentication_error', r.text);
    r = await raw('POST', '/v1/messages', '{"model":', hdr);
    ok(shape(r, 400, 'invalid_request_error'), 'broken JSON -> 400', r.text);
    r = await raw('GET', '/v1/messages', undefined, hdr);
    ok(shape(r, 405, 'invalid_request_error'), 'GET -> 405 in Anthropic\'s shape', r.text);
    r = await raw('POST', '/v1/messages/count_tokens', { model: MODEL, messages: hello }, bearer(KEY_A));
    ok(r.status === 200 && r.json.input_tokens > 0, 'Authorization: Bearer works on the Anthropic routes too', r.text);
    const e = await status(() => an.messages.create({ ...base, messages: hello }));
    ok(e === 400, 'the SDK sees a missing max_tokens as 400', e);
  });
}

// --------------------------------------------------------------- phases

async function afterRestart(state) {
  await check('restart: stored responses are there', async () => {
    const got = await oa.responses.retrieve(state.plain);
    ok(outText(got) === state.plainText, 'restart: retrieve the response from before', got);
    if (state.killed) {
      const k = await oa.responses.retrieve(state.killed);
      ok(k.status === 'completed' && outText(k) === D_CONTENT, 'kill -9: the response completed before it is there', k);
    }
    const r2 = await oa.responses.create({ ...base, previous_response_id: state.toolCall.id, tools: [weather],
      input: [{ type: 'function_call_output', call_id: state.toolCall.call_id, output: '{"sky": "clear"}' }] });
    ok(outText(r2) === ANSWER, 'restart: previous_response_id continues a conversation from before', r2);
  });
}

async function chain(state) {
  // weather -> call -> answer -> another question, each turn on whichever
  // backend nginx picks; every turn needs the stored previous one
  await check('chain: a conversation across backends', async () => {
    const r1 = await oa.responses.create({ ...base, input: 'What is the weather in Paris?', tools: [weather] });
    const call = texts(r1, 'function_call')[0];
    ok(call && call.name === 'get_weather', 'chain 1: the call', r1.output);
    const r2 = await oa.responses.create({ ...base, previous_response_id: r1.id, tools: [weather],
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'clear' }] });
    ok(outText(r2) === ANSWER, 'chain 2: the answer from the stored call', outText(r2));
    const s = await oa.responses.create({ ...base, previous_response_id: r2.id, input: 'Hello there.', stream: true });
    let final = null;
    for await (const ev of s) if (ev.type === 'response.completed') final = ev.response;
    ok(final && outText(final) !== '' && final.status === 'completed', 'chain 3: streamed continuation', final);
    const items = await oa.responses.inputItems.list(final.id, { order: 'asc', limit: 100 });
    ok(items.data.map((i) => i.type).join() ===
      'message,reasoning,function_call,function_call_output,reasoning,message,message',
    'chain 4: the third turn holds the whole conversation', items.data.map((i) => i.type));
    const r4 = await oa.responses.create({ ...base, previous_response_id: final.id, input: 'Hello there.' });
    ok(r4.status === 'completed', 'chain 5: and one more turn', r4);
    state.ids = [r1.id, r2.id, final.id, r4.id];
  });
}

const state = PHASE === 'main' || PHASE === 'chain' ? {} : JSON.parse(readFileSync(STATE, 'utf8'));
if (PHASE === 'main') {
  await responsesMain(state);
  await messagesMain();
} else if (PHASE === 'restart') {
  await afterRestart(state);
} else if (PHASE === 'chain') {
  await chain(state);
} else if (PHASE === 'scoping') {
  await scoping(state.plain || state.ids[0]);
} else if (PHASE === 'ids') {
  // every stored response readable, several times (on every backend)
  await check('ids: the stored conversation from every backend', async () => {
    let good = 0;
    for (let k = 0; k < 3; k++)
      for (const id of state.ids) {
        const r = await oa.responses.retrieve(id);
        if (r.id === id && r.status === 'completed') good++;
      }
    ok(good === 3 * state.ids.length, `ids: ${good} of ${3 * state.ids.length} reads`);
    const r = await oa.responses.create({ ...base, previous_response_id: state.ids.at(-1), input: 'Hello there.' });
    ok(r.status === 'completed', 'ids: and the conversation continues', r);
  });
} else if (PHASE === 'fuzz') {
  // mutated bodies through nginx: every answer is 200 or a 4xx in the
  // route's error shape, and the server stays up (the unit test fuzzes the
  // parsers alone; this reaches the handlers, the store and the runner)
  await check('fuzz: mutated bodies', async () => {
    const seeds = [
      ['/v1/responses', { model: MODEL, input: [{ role: 'user', content: 'What is the weather in Paris?' },
        { type: 'function_call', call_id: 'c', name: 'get_weather', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c', output: 'x' }], tools: [weather], max_output_tokens: 8,
      temperature: 0, text: { format: { type: 'json_object' } } }],
      ['/v1/responses', { model: MODEL, input: 'Hello there.', previous_response_id: state.plain, stream: true,
        max_output_tokens: 8, reasoning: { effort: 'low' } }],
      ['/v1/messages', { model: MODEL, max_tokens: 8, system: 's', stream: true, tools: [aWeather],
        tool_choice: { type: 'auto' }, messages: [{ role: 'user', content: 'w' }, { role: 'assistant', content: [
          { type: 'tool_use', id: 't', name: 'get_weather', input: { city: 'P' } }] }, { role: 'user', content: [
          { type: 'tool_result', tool_use_id: 't', content: 'ok' }] }] }],
      ['/v1/messages/count_tokens', { model: MODEL, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        thinking: { type: 'enabled', budget_tokens: 1024 } }],
    ];
    let rng = 26, bad = [], n = 0;
    const next = () => (rng = (rng * 1103515245 + 12345) % 2147483648);
    for (let round = 0; round < 240; round++) {
      const [path, body] = seeds[round % seeds.length];
      const b = [...Buffer.from(JSON.stringify(body))];
      for (let k = 0; k <= round % 3; k++) {
        const pos = next() % b.length, op = next() % 3;
        if (op === 0) b[pos] = next() % 128;
        else if (op === 1) b.splice(pos, 1);
        else b.splice(pos, 0, b[pos]);
      }
      const r = await raw('POST', path, Buffer.from(b).toString('latin1'), { 'x-api-key': KEY_A });
      n++;
      const anthropic = path.startsWith('/v1/messages');
      const shaped = r.status === 200 || (r.json && (anthropic ? r.json.type === 'error' && r.json.error.message
        : r.json.error && r.json.error.message));
      if (!shaped || r.status >= 500) bad.push([r.status, r.text.slice(0, 200)]);
    }
    ok(bad.length === 0, `fuzz: ${n} mutated bodies, every answer 200 or a 4xx in the route's shape`, bad.slice(0, 5));
    const h = await raw('GET', '/health');
    ok(h.status === 200, 'fuzz: the server is still up');
  });
} else if (PHASE === 'killed') {
  // one more completed response, then the caller kills the server (-9)
  await check('kill -9: a response to keep', async () => {
    const r = await oa.responses.create({ ...base, input: 'Hello there.' });
    ok(r.status === 'completed', 'kill -9: a completed response before the kill', r);
    state.killed = r.id;
  });
}
if (STATE && (PHASE === 'main' || PHASE === 'killed' || PHASE === 'chain')) writeFileSync(STATE, JSON.stringify(state));
