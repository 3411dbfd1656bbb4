// spec.test.mjs - speculative decoding through nginx with the REAL engine
// on stories260K.gguf (issue 27): OpenAI Predicted Outputs with the
// official `openai` client and n-gram drafts. Speculation never changes
// the output, so phase "record" (a server started with --spec none) writes
// the reference answers to REFS, and phase "check" (a server with
// speculation) asks the same with predictions and compares: text,
// logprobs, finish reasons, and the usage fields against counts computed
// here (completion_tokens = the reference's + rejected prediction tokens).
// Environment: BASE, API_KEY, MODEL, PHASE (record | check), REFS (a path).
import OpenAI from 'openai';
import { readFileSync, writeFileSync } from 'node:fs';
import { harness } from './harness.mjs';

const MODEL = process.env.MODEL;
const client = new OpenAI({ baseURL: `${process.env.BASE}/v1`, apiKey: process.env.API_KEY || 'none', timeout: 60000, maxRetries: 0 });
const { ok, check, post } = harness({ timeoutMs: 60000 });
const P = 'Once upon a time';

// the requests, by name; `pred(ref)` makes each one's prediction from its
// reference answer (null: the request is sent as is)
const edit = (t) => t.slice(0, Math.floor(t.length * 0.45)) + ' and then a dragon came to eat all the cake' + t.slice(Math.floor(t.length * 0.55));
const cases = {
  greedy: { body: { prompt: P, max_tokens: 120, temperature: 0 }, pred: (t) => t },
  greedy_edit: { body: { prompt: P, max_tokens: 120, temperature: 0 }, pred: edit },
  greedy_other: { body: { prompt: P, max_tokens: 60, temperature: 0 }, pred: () => 'The quick brown fox jumps over the lazy dog. '.repeat(6) },
  seeded: { body: { prompt: 'Lily and Ben', max_tokens: 100, temperature: 0.9, seed: 3 }, pred: (t) => t },
  penalties: { body: { prompt: P, max_tokens: 80, temperature: 0, frequency_penalty: 0.6, presence_penalty: 0.3 }, pred: (t) => t },
  logprobs: { body: { prompt: P, max_tokens: 40, temperature: 0, logprobs: 3 }, pred: (t) => t },
  n2: { body: { prompt: 'The dog', max_tokens: 50, temperature: 0.8, seed: 9, n: 2 }, pred: (t) => t },
  schema: {
    chat: true,
    body: {
      messages: [{ role: 'user', content: 'A story about a cat, as JSON.' }], max_tokens: 80, temperature: 0.7, seed: 4,
      response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object', properties: { title: { type: 'string', maxLength: 30 }, age: { type: 'integer' } }, required: ['title', 'age'], additionalProperties: false } } },
    },
    pred: (t) => t,
  },
  chat_parts: { chat: true, body: { messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 90, temperature: 0 }, pred: (t) => t, parts: true },
};

const textOf = (r, i = 0) => (r.choices[i].message ? r.choices[i].message.content : r.choices[i].text);

async function ask(c, prediction) {
  const body = { model: MODEL, ...c.body };
  if (prediction !== undefined) {
    body.prediction = { type: 'content', content: c.parts ? [{ type: 'text', text: prediction.slice(0, 20) }, { type: 'text', text: prediction.slice(20) }] : prediction };
  }
  return c.chat ? client.chat.completions.create(body) : client.completions.create(body);
}

if (process.env.PHASE === 'record') {
  const refs = {};
  for (const [name, c] of Object.entries(cases)) {
    await check(`record ${name}`, async () => {
      const r = await ask(c);
      refs[name] = r;
      ok(r.usage.completion_tokens > 0 && !r.usage.completion_tokens_details?.accepted_prediction_tokens,
        `reference ${name}: ${r.usage.completion_tokens} tokens, no prediction fields`, r.usage);
    });
  }
  writeFileSync(process.env.REFS, JSON.stringify(refs));
} else {
  const refs = JSON.parse(readFileSync(process.env.REFS, 'utf8'));
  for (const [name, c] of Object.entries(cases)) {
    await check(`prediction ${name}`, async () => {
      const ref = refs[name];
      const predText = c.pred(textOf(ref));
      const r = await ask(c, predText);
      const u = r.usage, d = u.completion_tokens_details || {};
      let same = r.choices.length === ref.choices.length;
      for (let i = 0; same && i < r.choices.length; i++) {
        same = textOf(r, i) === textOf(ref, i) && r.choices[i].finish_reason === ref.choices[i].finish_reason &&
          JSON.stringify(r.choices[i].logprobs) === JSON.stringify(ref.choices[i].logprobs);
      }
      ok(same, `${name}: the same text, finish_reason and logprobs as without speculation`, [r.choices, ref.choices]);
      // OpenAI: rejected prediction tokens count as completion tokens
      ok(Number.isInteger(d.accepted_prediction_tokens) && Number.isInteger(d.rejected_prediction_tokens) &&
        u.completion_tokens === ref.usage.completion_tokens + d.rejected_prediction_tokens &&
        u.total_tokens === u.prompt_tokens + u.completion_tokens &&
        d.accepted_prediction_tokens <= ref.usage.completion_tokens,
      `${name}: usage ${d.accepted_prediction_tokens} accepted, ${d.rejected_prediction_tokens} rejected, completion ${u.completion_tokens} = ${ref.usage.completion_tokens} + rejected`, u);
      if (name === 'greedy' || name === 'logprobs' || name === 'chat_parts')
        ok(d.accepted_prediction_tokens >= 0.8 * ref.usage.completion_tokens, `${name}: a prediction equal to the output is mostly accepted (${d.accepted_prediction_tokens} of ${ref.usage.completion_tokens})`);
      if (name === 'greedy_edit')
        ok(d.accepted_prediction_tokens >= 0.6 * ref.usage.completion_tokens, `${name}: an edit in the middle, the rest still accepted (${d.accepted_prediction_tokens})`);
      if (name === 'greedy_other')
        ok(d.accepted_prediction_tokens === 0, `${name}: an unrelated prediction accepts nothing (${d.rejected_prediction_tokens} rejected)`);
    });
  }
  await check('streamed prediction', async () => {
    const ref = refs.greedy;
    const s = await client.completions.create({ model: MODEL, ...cases.greedy.body, prediction: { type: 'content', content: textOf(ref) }, stream: true, stream_options: { include_usage: true } });
    let text = '', usage = null;
    for await (const ch of s) {
      for (const c of ch.choices) text += c.text;
      if (ch.usage) usage = ch.usage;
    }
    const d = usage?.completion_tokens_details || {};
    ok(text === textOf(ref) && d.accepted_prediction_tokens >= 0.8 * ref.usage.completion_tokens &&
      usage.completion_tokens === ref.usage.completion_tokens + d.rejected_prediction_tokens,
    `streamed: the same text; the final usage chunk carries the prediction counts (${d.accepted_prediction_tokens} accepted)`, usage);
  });
  await check('bad predictions', async () => {
    const bad = [
      [{ type: 'text', content: 'x' }, 'prediction.type'],
      ['just a string', 'prediction'],
      [{ type: 'content' }, 'prediction'],
      [{ type: 'content', content: 5 }, 'prediction'],
      [{ type: 'content', content: [{ type: 'image_url', image_url: { url: 'x' } }] }, 'prediction.content[0]'],
    ];
    for (const [p, what] of bad) {
      const r = await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, prediction: p });
      ok(r.status === 400 && r.json?.error?.param === 'prediction' && r.json.error.message.includes(what),
        `a bad prediction (${JSON.stringify(p).slice(0, 50)}) is a 400 naming it`, r.json);
    }
  });
  if (process.env.DRAFT_MODEL) {
    await check('draft model drafts', async () => {
      const m = await (await fetch(`${process.env.BASE}/metrics`, { headers: { Authorization: `Bearer ${process.env.API_KEY}` } })).text();
      const v = (what) => Number((m.match(new RegExp(`^llm_spec_${what}_tokens_total\\{[^}]*source="draft_model"\\} (\\d+)$`, 'm')) || [])[1]);
      ok(v('draft') > 0 && v('accepted') > 0, `/metrics: the draft model drafted ${v('draft')}, ${v('accepted')} accepted`);
    });
  }
  // (the random tiny hybrid never repeats itself: its n-gram drafts are
  // tested in test_sched_spec)
  if (!process.env.DRAFT_MODEL && !process.env.NO_NGRAM) await check('n-gram drafts', async () => {
    // repetitive text: the output repeats what the prompt says
    const prompt = 'One, two, three. One, two, three. One, two, three. One, two, three. One, two,';
    const off = await post('/v1/completions', { model: MODEL, prompt, max_tokens: 40, temperature: 0 });
    const m = await (await fetch(`${process.env.BASE}/metrics`, { headers: { Authorization: `Bearer ${process.env.API_KEY}` } })).text();
    const v = (src, what) => Number((m.match(new RegExp(`^llm_spec_${what}_tokens_total\\{[^}]*source="${src}"\\} (\\d+)$`, 'm')) || [])[1]);
    ok(off.status === 200 && v('ngram', 'draft') > 0 && v('prediction', 'accepted') > 0,
      `/metrics: drafted and accepted per source (ngram ${v('ngram', 'accepted')} of ${v('ngram', 'draft')}, prediction ${v('prediction', 'accepted')} of ${v('prediction', 'draft')})`);
  });
}
