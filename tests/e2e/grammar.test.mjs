// grammar.test.mjs - structured output end to end: the official `openai`
// SDK through nginx to llm-fcgi with the REAL engine. Every constrained
// output is checked with a real validator (ajv + ajv-formats) or the
// regex / choice / grammar it must match; a response that ends with
// finish_reason "stop" under a constraint must always validate.
// SUITE=stories: stories260K (a tiny story model: the grammar, not the
// model, makes the output valid) with the hermes tool-call format;
// SUITE=scripted: the scripted fixture model whose greedy script emits a
// get_weather call (forced calls must keep what the model would write).
// Prints TAP lines (serve_grammar.sh counts them).
import OpenAI from 'openai';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { zodResponseFormat } from 'openai/helpers/zod';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY = process.env.API_KEY || 'none';
const MODEL = process.env.MODEL;
const SUITE = process.env.SUITE || 'stories';
const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: KEY, timeout: 60000, maxRetries: 0 });
const { ok, check, post } = harness({ prefix: `[${SUITE}] `, timeoutMs: 60000, detailChars: 1500 });

function validator(schema) {
  const draft2020 = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
  const ajv = draft2020 ? new Ajv2020({ strict: false }) : new Ajv({ strict: false });
  addFormats(ajv);
  return ajv.compile(schema);
}

function validJson(text, schema) {
  let v;
  try { v = JSON.parse(text); } catch (e) { return { ok: false, why: `not JSON: ${e.message}` }; }
  const f = validator(schema);
  return f(v) ? { ok: true, value: v } : { ok: false, why: JSON.stringify(f.errors) };
}

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    email: { type: 'string', format: 'email', maxLength: 24 },
    tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 },
    ok: { type: 'boolean' },
  },
  required: ['name', 'age', 'ok'],
  additionalProperties: false,
};
const msgs = [{ role: 'user', content: 'Tell me about a person.' }];

if (SUITE === 'stories') {
  await check('json_schema: the output validates, finish_reason stop', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 400, temperature: 1, seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } } });
    const c = r.choices[0];
    const v = validJson(c.message.content, person);
    ok(c.finish_reason === 'stop' && v.ok, 'json_schema: valid JSON for the schema, finish_reason stop', { c, v });
  });

  await check('json_schema streamed', async () => {
    const s = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 400, stream: true, seed: 3,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person } } });
    let text = '', finish = null;
    for await (const ch of s) {
      const c = ch.choices[0];
      if (!c) continue;
      text += c.delta.content || '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    const v = validJson(text, person);
    ok(finish === 'stop' && v.ok, 'json_schema streamed: the chunks add up to valid JSON', { text, finish, v });
  });

  await check('json_object', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 300, seed: 11,
      response_format: { type: 'json_object' } });
    const c = r.choices[0];
    if (c.finish_reason === 'stop') {
      let v = null;
      try { v = JSON.parse(c.message.content); } catch { /* checked below */ }
      ok(v !== null && typeof v === 'object' && !Array.isArray(v), 'json_object: a JSON object', c);
    } else {
      ok(c.finish_reason === 'length', 'json_object: stop or length', c);
    }
  });

  await check('zodResponseFormat + parse()', async () => {
    const Person = z.object({ name: z.enum(['Ann', 'Bob']), age: z.number().int().min(1).max(99), member: z.boolean() });
    const r = await client.beta.chat.completions.parse({ model: MODEL, messages: msgs, max_tokens: 200, seed: 5,
      response_format: zodResponseFormat(Person, 'person') });
    const p = r.choices[0].message.parsed;
    ok(r.choices[0].finish_reason === 'stop' && p && Person.safeParse(p).success, 'zod: .parse() returns a valid object', r.choices[0]);
  });

  await check('completions + response_format', async () => {
    const schema = { type: 'array', items: { type: 'integer', minimum: -5, maximum: 5 }, minItems: 2, maxItems: 4 };
    const r = await client.completions.create({ model: MODEL, prompt: 'Numbers:', max_tokens: 200, seed: 2,
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } });
    const v = validJson(r.choices[0].text, schema);
    ok(r.choices[0].finish_reason === 'stop' && v.ok, 'completions: JSON valid for the schema', { c: r.choices[0], v });
  });

  await check('llama.cpp json_schema field', async () => {
    const schema = { type: 'object', properties: { color: { enum: ['red', 'green'] }, n: { type: 'number', exclusiveMinimum: 0, maximum: 10 } }, required: ['color', 'n'], additionalProperties: false };
    const r = await post('/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 200, json_schema: schema, seed: 9 });
    const c = r.json && r.json.choices[0];
    const v = c ? validJson(c.text, schema) : { ok: false };
    ok(r.status === 200 && c.finish_reason === 'stop' && v.ok, 'json_schema (llama.cpp): valid', { r: r.json, v });
  });

  await check('guided_regex', async () => {
    const re = '(yes|no), [0-9]{2,3} (cats|dogs)';
    const r = await post('/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 50, guided_regex: re });
    const c = r.json.choices[0];
    ok(c.finish_reason === 'stop' && new RegExp(`^(?:${re})$`).test(c.text), 'guided_regex: the text matches', c);
  });

  await check('structured_outputs.regex (chat)', async () => {
    const re = '[A-Z][a-z]{1,6}-[0-9]{4}';
    const r = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 50, structured_outputs: { regex: re } });
    const c = r.json.choices[0];
    ok(c.finish_reason === 'stop' && new RegExp(`^(?:${re})$`).test(c.message.content), 'structured_outputs.regex: matches', c);
  });

  await check('guided_choice', async () => {
    const choices = ['positive', 'negative', 'neutral'];
    const r = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 20, guided_choice: choices });
    const c = r.json.choices[0];
    ok(c.finish_reason === 'stop' && choices.includes(c.message.content), 'guided_choice: one of the choices', c);
  });

  await check('GBNF grammar', async () => {
    const gbnf = 'root ::= "ok " item ("," item){0,3}\nitem ::= [0-9] | "x" [a-c]\n';
    const r = await post('/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 40, grammar: gbnf });
    const c = r.json.choices[0];
    ok(c.finish_reason === 'stop' && /^ok ([0-9]|x[a-c])(,([0-9]|x[a-c])){0,3}$/.test(c.text), 'grammar (GBNF): matches', c);
    const r2 = await post('/v1/completions', { model: MODEL, prompt: 'Once', max_tokens: 40, guided_grammar: gbnf });
    const c2 = r2.json.choices[0];
    ok(c2.finish_reason === 'stop' && /^ok /.test(c2.text), 'guided_grammar: matches', c2);
  });

  const weather = { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', strict: true,
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['C', 'F'] } },
      required: ['city', 'unit'], additionalProperties: false } } };
  const time = { type: 'function', function: { name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'integer', minimum: -12, maximum: 14 } }, required: ['zone'], additionalProperties: false } } };
  const argsValid = (call, tool) => validJson(call.function.arguments, tool.function.parameters);

  await check('tool_choice named forces the call', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 200, tools: [weather, time],
      tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false });
    const c = r.choices[0];
    const call = c.message.tool_calls && c.message.tool_calls[0];
    ok(c.finish_reason === 'tool_calls' && c.message.tool_calls.length === 1 && call.function.name === 'get_time' &&
       argsValid(call, time).ok, 'named: one get_time call with valid arguments', c);
  });

  await check('tool_choice required forces a call', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 200, tools: [weather, time],
      tool_choice: 'required', parallel_tool_calls: false, seed: 4, temperature: 1 });
    const c = r.choices[0];
    const call = c.message.tool_calls && c.message.tool_calls[0];
    const tool = call && (call.function.name === 'get_weather' ? weather : time);
    ok(c.finish_reason === 'tool_calls' && c.message.tool_calls.length === 1 && tool && argsValid(call, tool).ok,
       'required: one call with valid arguments', c);
  });

  await check('tool_choice required, streamed', async () => {
    const s = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 200, tools: [weather],
      tool_choice: 'required', parallel_tool_calls: false, stream: true });
    let args = '', name = null, finish = null;
    for await (const ch of s) {
      const c = ch.choices[0];
      if (!c) continue;
      for (const tc of c.delta.tool_calls || []) {
        if (tc.function && tc.function.name) name = tc.function.name;
        if (tc.function && tc.function.arguments) args += tc.function.arguments;
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
    ok(finish === 'tool_calls' && name === 'get_weather' && validJson(args, weather.function.parameters).ok,
       'required streamed: the argument fragments add up to valid arguments', { name, args, finish });
  });

  await check('unsupported keyword: 400 naming it', async () => {
    const r = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } });
    ok(r.status === 400 && r.json.error.param === 'response_format' && r.json.error.message.includes('uniqueItems'),
       'uniqueItems: 400 naming the keyword', r.json);
    const r2 = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'x', strict: false, schema: { type: 'array', items: { type: 'integer' }, uniqueItems: true, maxItems: 3 } } } });
    ok(r2.status === 200, 'strict false: the same keyword is relaxed (200)', r2.json);
    const r3 = await post('/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 5, guided_regex: '(a)\\1' });
    ok(r3.status === 400 && r3.json.error.param === 'guided_regex' && /backreference/.test(r3.json.error.message),
       'a backreference in guided_regex: 400 naming it', r3.json);
    const r4 = await post('/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 5, guided_regex: 'a', guided_choice: ['b'] });
    ok(r4.status === 400 && r4.json.error.param === 'guided_choice', 'two constraints: 400', r4.json);
    const r5 = await post('/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 5, grammar: 'root ::= missing' });
    ok(r5.status === 400 && r5.json.error.message.includes('undefined rule'), 'GBNF error: 400 with the reason', r5.json);
    const r6 = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', minimum: 5, maximum: 3 } } } });
    ok(r6.status === 400 && /admits no/.test(r6.json.error.message), 'an unsatisfiable schema: 400', r6.json);
  });

  await check('constrained and unconstrained requests share the batch', async () => {
    const schema = { type: 'object', properties: { k: { enum: ['x', 'y'] }, v: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['k', 'v'], additionalProperties: false };
    const jobs = [];
    for (let i = 0; i < 4; i++) {
      jobs.push(client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 120, seed: i, temperature: 1,
        response_format: { type: 'json_schema', json_schema: { name: 'kv', schema } } }));
      jobs.push(client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 20, seed: i }));
    }
    const rs = await Promise.all(jobs);
    let good = 0;
    for (let i = 0; i < rs.length; i += 2) good += rs[i].choices[0].finish_reason === 'stop' && validJson(rs[i].choices[0].message.content, schema).ok;
    ok(good === 4, 'four constrained outputs in parallel with four free ones: all valid', rs.map((r) => r.choices[0]));
  });

  await check('/metrics has the grammar counters', async () => {
    const r = await fetch(`${BASE}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
    const t = await r.text();
    ok(/llm_fcgi_grammar_compiles_total\{outcome="ok"\} [1-9]/.test(t) && /llm_fcgi_grammar_mask_seconds_count [1-9]/.test(t) &&
       /llm_fcgi_grammar_cache_hits_total [1-9]/.test(t), '/metrics: compiles, masks, cache hits', t.slice(-1200));
  });
}

if (SUITE === 'scripted') {
  const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
  const qWeather = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const noThink = { chat_template_kwargs: { enable_thinking: false } };

  await check('scripted: tool_choice named keeps the model\'s call', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: qWeather, max_tokens: 120, temperature: 0,
      tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false });
    const c = r.choices[0];
    const call = c.message.tool_calls && c.message.tool_calls[0];
    ok(c.finish_reason === 'tool_calls' && call && call.function.name === 'get_weather' &&
       JSON.parse(call.function.arguments).city === 'Paris' && c.message.reasoning_content && c.message.reasoning_content.length > 0,
       'named: the reasoning, then the scripted get_weather(Paris) call', c);
  });

  await check('scripted: tool_choice required, no reasoning', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: qWeather, max_tokens: 120, temperature: 0,
      tools: [weatherTool], tool_choice: 'required', parallel_tool_calls: false, ...noThink });
    const c = r.choices[0];
    const call = c.message.tool_calls && c.message.tool_calls[0];
    ok(c.finish_reason === 'tool_calls' && call && JSON.parse(call.function.arguments).city === 'Paris',
       'required: the scripted call', c);
  });

  await check('scripted: a call forced against the script', async () => {
    const enumTool = { type: 'function', function: { name: 'pick', parameters: { type: 'object',
      properties: { n: { enum: [1, 2, 3] } }, required: ['n'], additionalProperties: false } } };
    const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 400,
      temperature: 0, tools: [enumTool], tool_choice: 'required', parallel_tool_calls: false, ...noThink });
    const c = r.choices[0];
    const call = c.message.tool_calls && c.message.tool_calls[0];
    ok(c.finish_reason === 'tool_calls' && call && call.function.name === 'pick' &&
       validJson(call.function.arguments, enumTool.function.parameters).ok, 'required on a greeting: a valid pick call', c);
  });

  await check('scripted: json_schema after the reasoning block', async () => {
    const schema = { type: 'object', properties: { answer: { enum: ['yes', 'no'] } }, required: ['answer'], additionalProperties: false };
    const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 150,
      temperature: 0, response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } });
    const c = r.choices[0];
    ok(c.finish_reason === 'stop' && validJson(c.message.content, schema).ok && (c.message.reasoning_content || '').length > 0,
       'the reasoning stays free, the content validates', c);
  });
}

// SUITE=format: stories260K with --tool-call-parser FORMAT (FORMAT in the
// environment): a forced call written in that format's layout must come
// back through its parser as tool_calls with valid arguments, streamed or not.
if (SUITE === 'format') {
  const FORMAT = process.env.FORMAT;
  const XML = process.env.XML === '1'; // parameters written as elements (qwen3_coder, glm45, ...)
  const city = { type: 'function', function: { name: 'get_weather', strict: true,
    parameters: { type: 'object', properties: { city: XML ? { type: 'string', enum: ['Paris', 'Oslo', 'New York'] }
      : { type: 'string', maxLength: 10 }, unit: { enum: ['C', 'F'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      required: ['city', 'unit'], additionalProperties: false } } };
  const zone = { type: 'function', function: { name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'integer', minimum: -12, maximum: 14 } }, required: ['zone'],
      additionalProperties: false } } };
  const argsValid = (call, tool) => validJson(call.function.arguments, tool.function.parameters);

  await check(`${FORMAT}: tool_choice named`, async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 600, tools: [city, zone],
      tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false, seed: 3, temperature: 1 });
    const c = r.choices[0];
    const call = c.message.tool_calls && c.message.tool_calls[0];
    ok(c.finish_reason === 'tool_calls' && c.message.tool_calls.length === 1 && call.function.name === 'get_time' &&
       argsValid(call, zone).ok && !c.message.content, `${FORMAT}: named: one get_time call, valid arguments, no content`, c);
  });

  await check(`${FORMAT}: tool_choice required, streamed`, async () => {
    const s = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 600, tools: [city],
      tool_choice: 'required', parallel_tool_calls: false, stream: true, seed: 5, temperature: 1 });
    let args = '', name = null, finish = null, content = '';
    for await (const ch of s) {
      const c = ch.choices[0];
      if (!c) continue;
      content += c.delta.content || '';
      for (const tc of c.delta.tool_calls || []) {
        if (tc.function && tc.function.name) name = tc.function.name;
        if (tc.function && tc.function.arguments) args += tc.function.arguments;
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
    ok(finish === 'tool_calls' && name === 'get_weather' && validJson(args, city.function.parameters).ok && !content.trim(),
       `${FORMAT}: required streamed: valid arguments, no content`, { name, args, finish, content });
  });

  if (XML) {
    // (free text values are any text up to the closing tag: a story model
    // never writes the tag, so that case is left to test_toolcall_layout)
    await check(`${FORMAT}: raw and typed parameters`, async () => {
      const note = { type: 'function', function: { name: 'save_note', strict: true, parameters: { type: 'object',
        properties: { title: { enum: ['todo', 'idea'] }, tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
          pinned: { type: 'boolean' }, score: { type: 'number', minimum: 0, maximum: 1 } },
        required: ['title', 'tags', 'pinned'], additionalProperties: false } } };
      const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 600, tools: [note],
        tool_choice: 'required', parallel_tool_calls: false, seed: 9, temperature: 1 });
      const c = r.choices[0];
      const call = c.message.tool_calls && c.message.tool_calls[0];
      ok(c.finish_reason === 'tool_calls' && call && call.function.name === 'save_note' &&
         validJson(call.function.arguments, note.function.parameters).ok,
         `${FORMAT}: a raw enum, a JSON array, a boolean and a number come back as valid arguments`, c);
    });
    await check(`${FORMAT}: raw parameters with a length bound, a pattern and a format`, async () => {
      const tool = { type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object',
        properties: { s: { type: 'string', maxLength: 4 }, p: { type: 'string', pattern: '^[a-z]{2,5}$' },
          d: { type: 'string', format: 'date' } }, required: ['s', 'p', 'd'], additionalProperties: false } } };
      const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 600, tools: [tool],
        tool_choice: 'required', parallel_tool_calls: false, seed: 11, temperature: 1 });
      const c = r.choices[0];
      const call = c.message.tool_calls && c.message.tool_calls[0];
      ok(c.finish_reason === 'tool_calls' && call && validJson(call.function.arguments, tool.function.parameters).ok,
         `${FORMAT}: the raw values keep maxLength, pattern and format (ajv)`, c);
      const bad = { type: 'function', function: { name: 'g', strict: true,
        parameters: { type: 'object', properties: { s: { type: 'string', not: { maxLength: 2 } } }, required: ['s'] } } };
      const r2 = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 40, tools: [bad],
        tool_choice: 'required' });
      ok(r2.status === 400 && /'not'/.test(r2.json.error.message) && /properties\.s/.test(r2.json.error.param || ''),
         `${FORMAT}: strict: 'not' of a length on a raw parameter is a 400 naming it`, r2.json);
    });
    await check(`${FORMAT}: 'not' const / pattern on raw text, $ref into the parameters' $defs`, async () => {
      // pydantic writes nested models as $defs + $ref; a raw value may exclude values and patterns
      const tool = { type: 'function', function: { name: 'book', strict: true, parameters: { type: 'object',
        $defs: { Place: { type: 'object', properties: { city: { type: 'string', maxLength: 6 }, n: { type: 'integer', minimum: 0, maximum: 9 } },
          required: ['city', 'n'], additionalProperties: false } },
        properties: { where: { $ref: '#/$defs/Place' }, s: { type: 'string', maxLength: 3, not: { enum: ['a', 'b'], pattern: '^z' } } },
        required: ['where', 's'], additionalProperties: false } } };
      for (const seed of [21, 22]) {
        const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 600, tools: [tool],
          tool_choice: 'required', parallel_tool_calls: false, seed, temperature: 1 });
        const c = r.choices[0];
        const call = c.message.tool_calls && c.message.tool_calls[0];
        ok(c.finish_reason === 'tool_calls' && call && validJson(call.function.arguments, tool.function.parameters).ok,
           `${FORMAT}: seed ${seed}: a $ref value and a raw value with 'not' validate (ajv)`, c);
      }
    });
  }

  if (FORMAT === 'minimax_m3') {
    // its values may nest as elements (<item>…</item>, <key>…</key>) or be JSON text
    await check(`${FORMAT}: arrays and objects as nested elements or JSON`, async () => {
      const tool = { type: 'function', function: { name: 'plan', strict: true, parameters: { type: 'object',
        properties: { tags: { type: 'array', items: { type: 'string', maxLength: 4 }, minItems: 1, maxItems: 3 },
          stop: { type: 'object', properties: { at: { type: 'string', maxLength: 5 }, n: { type: 'integer', minimum: 0, maximum: 9 },
            ok: { type: 'boolean' } }, required: ['at', 'n'], additionalProperties: false },
          legs: { type: 'array', items: { type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 3 } },
            required: ['n'], additionalProperties: false }, maxItems: 2 } },
        required: ['tags', 'stop', 'legs'], additionalProperties: false } } };
      // (the story model's vocabulary spells each ]<]minimax[>[ marker in ~10 tokens)
      for (const seed of [31, 32, 33, 34]) {
        const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 1200, tools: [tool],
          tool_choice: 'required', parallel_tool_calls: false, seed, temperature: 1 });
        const c = r.choices[0];
        const call = c.message.tool_calls && c.message.tool_calls[0];
        ok(c.finish_reason === 'tool_calls' && call && validJson(call.function.arguments, tool.function.parameters).ok,
           `${FORMAT}: seed ${seed}: nested values validate (ajv)`, c);
      }
    });
  }

  if (FORMAT === 'gemma4') {
    // Gemma 4's own argument syntax: every string between <|"|> as raw
    // text, keys bare or delimited; the parser reads it back as JSON
    await check(`${FORMAT}: raw strings in nested values keep their keywords`, async () => {
      const tool = { type: 'function', function: { name: 'plan', strict: true, parameters: { type: 'object',
        properties: { s: { type: 'string', maxLength: 4, not: { const: 'x' } }, p: { type: 'string', pattern: '^[a-z]{2,5}$' },
          d: { type: 'string', format: 'date' }, kind: { enum: ['a "quoted" one', 'b\\c'] },
          stops: { type: 'array', items: { type: 'object', properties: { at: { type: 'string', maxLength: 3 },
            n: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['at', 'n'], additionalProperties: false },
          minItems: 1, maxItems: 2 } },
        required: ['s', 'p', 'd', 'kind', 'stops'], additionalProperties: false } } };
      for (const seed of [11, 12]) {
        const r = await client.chat.completions.create({ model: MODEL, messages: msgs, max_tokens: 600, tools: [tool],
          tool_choice: 'required', parallel_tool_calls: false, seed, temperature: 1 });
        const c = r.choices[0];
        const call = c.message.tool_calls && c.message.tool_calls[0];
        ok(c.finish_reason === 'tool_calls' && call && validJson(call.function.arguments, tool.function.parameters).ok,
           `${FORMAT}: seed ${seed}: strings, a pattern, a format, an enum with quotes, nested objects (ajv)`, c);
      }
    });
  }
}
