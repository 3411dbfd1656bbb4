// families.test.mjs - one model family through nginx + llm-fcgi: llama.cpp's
// golden greedy texts and logprobs, streaming, n, logprobs and prefix
// caching (with sliding windows: prompts longer than the window). Prints one
// TAP line per check (the .sh wrapper counts). Environment: BASE, MODEL (the
// served name), GOLDEN (the greedy-*.jsonl of the fixture), WINDOW (the
// sliding window, 0 without), RECURRENT=1 for hybrid models (recurrent
// state: a prefix is reusable where the state was snapshotted, see below).
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { harness } from './harness.mjs';

const MODEL = process.env.MODEL;
const WINDOW = Number(process.env.WINDOW || 0);
const RECURRENT = process.env.RECURRENT === '1';
const golden = readFileSync(process.env.GOLDEN, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const client = new OpenAI({ baseURL: `${process.env.BASE}/v1`, apiKey: process.env.API_KEY || 'none', timeout: 60000, maxRetries: 0 });
const { ok, check, post, failed } = harness({ prefix: `[${MODEL}] `, timeoutMs: 60000 });

const sseText = (text) => text.split('\n\n').filter((e) => e.startsWith('data: {'))
  .map((e) => JSON.parse(e.slice(6))).flatMap((c) => c.choices.map((x) => x.text)).join('');

await check('golden greedy texts', async () => {
  // all records at once: the server batches them (--parallel), and every
  // text must still be llama.cpp's, token for token
  const res = await Promise.all(golden.map((g) => client.completions.create({
    model: MODEL, prompt: g.prompt, max_tokens: g.completion_tokens.length, temperature: 0,
  })));
  res.forEach((r, i) => {
    const g = golden[i], c = r.choices[0];
    ok(c.text === g.completion_text && r.usage.prompt_tokens === g.prompt_tokens.length,
      `record ${i + 1}: the greedy text is llama.cpp's (${g.prompt_tokens.length} prompt tokens)`, { got: c.text, want: g.completion_text });
    ok(c.finish_reason === (g.stop_type === 'eos' ? 'stop' : 'length'), `record ${i + 1}: finish_reason for stop ${g.stop_type}`, c.finish_reason);
  });
});

await check('streamed', async () => {
  const g = golden.reduce((a, b) => (b.prompt_tokens.length > a.prompt_tokens.length ? b : a));
  const r = await post('/v1/completions', { model: MODEL, prompt: g.prompt, max_tokens: g.completion_tokens.length, temperature: 0, stream: true });
  ok(r.status === 200 && r.text.endsWith('data: [DONE]\n\n') && sseText(r.text) === g.completion_text,
    `the longest prompt (${g.prompt_tokens.length} tokens) streamed gives the same text`, sseText(r.text));
});

await check('logprobs', async () => {
  const g = golden[0];
  const r = await client.completions.create({ model: MODEL, prompt: g.prompt, max_tokens: 8, temperature: 0, logprobs: 5 });
  const lp = r.choices[0].logprobs;
  const steps = Math.min(8, g.completion_tokens.length);
  ok(lp && lp.token_logprobs.length === steps && lp.top_logprobs.length === steps, 'completions logprobs: one entry per token', lp);
  let worst = 0;
  for (let s = 0; s < steps; s++) worst = Math.max(worst, Math.abs(lp.token_logprobs[s] - g.top_probs[s][0].logprob));
  ok(worst < 2e-3, `logprobs of the chosen tokens within 2e-3 of llama.cpp's (worst ${worst.toExponential(2)})`);
});

await check('chat with n and logprobs', async () => {
  const body = { model: MODEL, messages: [{ role: 'user', content: 'Tell me a story about a cat.' }], max_tokens: 12,
    temperature: 0, n: 2, logprobs: true, top_logprobs: 3 };
  const r = await client.chat.completions.create(body);
  const [a, b] = r.choices;
  ok(r.choices.length === 2 && a.message.content === b.message.content, 'n=2 greedy: two identical choices', r.choices);
  ok(a.logprobs.content.length === r.usage.completion_tokens / 2 && a.logprobs.content.every((t) => t.top_logprobs.length === 3),
    'chat logprobs: one entry per token with 3 alternatives', a.logprobs.content.length);
  const s = await client.chat.completions.create({ ...body, stream: true });
  const text = ['', ''];
  for await (const ch of s) for (const c of ch.choices) text[c.index] += c.delta.content || '';
  ok(text[0] === a.message.content && text[1] === a.message.content, 'n=2 streamed: both texts equal the non-streamed one', text);
});

await check('prefix caching', async () => {
  // a prompt longer than any sliding window, then the same prompt extended
  // (a conversation's next turn), then both again
  const base = golden.reduce((a, b) => (b.prompt.length > a.prompt.length ? b : a)).prompt;
  const next = `${base} Then they went home and had a big dinner together.`;
  const run = (prompt) => client.completions.create({ model: MODEL, prompt, max_tokens: 16, temperature: 0 });
  const n1 = await run(next);
  const b1 = await run(base);
  const n2 = await run(next);
  const cached = (r) => r.usage.prompt_tokens_details?.cached_tokens ?? 0;
  if (RECURRENT) {
    // a recurrent state cannot be rolled back: `base` (a prefix of `next`)
    // resumes only where a snapshot was taken; its first run snapshots the
    // end of the matched chain, so a second run of it resumes there
    const b2 = await run(base);
    ok(cached(n2) >= 64 && cached(b2) >= 64 && b2.choices[0].text === b1.choices[0].text,
      `state resumed from snapshots (${cached(b1)}, then ${cached(b2)} cached tokens of the prefix; ${cached(n2)} of the longer prompt)`,
      [b1.usage, b2.usage, n2.usage]);
  } else {
    ok(cached(b1) >= 64 && cached(n2) >= 64, `prefix reused (${cached(b1)} and ${cached(n2)} cached tokens${WINDOW ? `, window ${WINDOW}` : ''})`,
      [b1.usage, n2.usage]);
  }
  ok(n2.choices[0].text === n1.choices[0].text, 'a cached prefix gives the text of the uncached run', [n1.choices[0].text, n2.choices[0].text]);
  const g = golden.find((x) => x.prompt === base);
  ok(b1.choices[0].text === g.completion_text.slice(0, b1.choices[0].text.length) && b1.choices[0].text.length > 0,
    'after a cached prefix the text is still llama.cpp\'s', b1.choices[0].text);
});

await check('metrics', async () => {
  const r = await fetch(`${process.env.BASE}/metrics`, { signal: AbortSignal.timeout(10000) });
  const t = await r.text();
  const v = (name) => Number((t.match(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm')) || [])[1]);
  const usage = v('llm_kv_cache_usage_perc'), used = v('llm_kv_cache_used_bytes'), total = v('llm_kv_cache_bytes');
  ok(r.status === 200 && usage >= 0 && usage <= 1 && used <= total && total > 0,
    `/metrics KV memory: ${used} of ${total} bytes in use`, { usage, used, total });
  if (RECURRENT) {
    const per = v('llm_recurrent_state_bytes_per_sequence'), live = v('llm_recurrent_state_bytes');
    const snaps = v('llm_recurrent_state_snapshots'), restores = v('llm_recurrent_state_restores_total');
    ok(per > 0 && live === 4 * per && snaps > 0 && restores > 0,
      `/metrics recurrent state: ${per} bytes per sequence, ${live} live, ${snaps} snapshots cached, ${restores} restores`,
      { per, live, snaps, restores });
  }
});

process.exit(failed() ? 1 : 0);
