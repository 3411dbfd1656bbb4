// chat_page.test.mjs - the chat page (www/) in a real browser: Debian's
// chromium, headless, driven with puppeteer-core. Emits TAP lines.
//
// BASE     the page's origin (through nginx)
// SUITE    "scripted": the scripted fixture model behind the run template
//          with llm-fcgi's own key check (KEY): 401 wording, model name,
//          streaming, folded reasoning, tool calls;
//          "site": the 87M-parameter bench model behind the production
//          site (TLS, the snippet, nginx-side keys; KEY): an answer with
//          max tokens, text shown while it streams, the stop button
// SHOTS    directory for the screenshots (test artifacts)
import puppeteer from 'puppeteer-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const KEY = process.env.KEY;
const SUITE = process.env.SUITE || 'scripted';
const SHOTS = process.env.SHOTS || 'screenshots';
const { ok, check } = harness({ prefix: `[${SUITE}] ` });
mkdirSync(SHOTS, { recursive: true });

// The API's own words for a request (what the page must show).
async function api(path, key, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(BASE + path, body ? { method: 'POST', headers, body: JSON.stringify(body) } : { headers });
  return { status: res.status, json: await res.json() };
}

const profile = mkdtempSync(join(tmpdir(), 'llm-chromium-'));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  acceptInsecureCerts: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage', '--ignore-certificate-errors', `--user-data-dir=${profile}`],
});
const page = await browser.newPage();
await page.setViewport({ width: 1000, height: 760 });
const consoleErrors = [];
page.on('pageerror', (e) => consoleErrors.push(String(e)));
const shot = (name) => page.screenshot({ path: join(SHOTS, `${SUITE}-${name}.png`) });

async function setField(id, value) {
  await page.evaluate((id, value) => {
    const el = document.getElementById(id);
    el.value = value;
    el.dispatchEvent(new Event('change'));
  }, id, value);
}
async function openSettings() {
  if (await page.$eval('#settings', (s) => s.hidden)) await page.click('#settings-toggle');
}
// Types a message, sends it with Enter, waits until the answer is done.
async function ask(text, { waitDone = true } = {}) {
  const before = await page.$$eval('.msg.assistant', (m) => m.length);
  await page.click('#input');
  await page.type('#input', text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant').length > n, {}, before);
  if (waitDone) await page.waitForFunction(() => !document.body.classList.contains('busy'), { timeout: 60000 });
  return page.evaluateHandle(() => [...document.querySelectorAll('.msg.assistant')].pop());
}
const textOf = (h, sel) => h.evaluate((m, sel) => (m.querySelector(sel) || {}).textContent || '', sel);
const norm = (s) => String(s || '').replace(/\s+/g, ' ').trim();

await check('the page loads with its script and Debian\'s marked', async () => {
  const res = await page.goto(`${BASE}/`, { waitUntil: 'load' });
  ok(res.status() === 200, 'GET / is the chat page', res.status());
  ok(await page.evaluate(() => typeof window.marked === 'object' && typeof window.marked.parse === 'function'),
    'marked.min.js (libjs-marked) is loaded');
});

if (SUITE === 'scripted') {
  const noKey = await api('/v1/models', null);
  const badKey = await api('/v1/models', 'sk-wrong');

  await check('no key: the 401 is shown as the API words it', async () => {
    await page.waitForFunction(() => document.getElementById('status').textContent.length > 0);
    const status = await page.$eval('#status', (s) => s.textContent);
    ok(noKey.status === 401 && status === `401: ${noKey.json.error.message}`, 'status line has the API message', status);
    ok(await page.$eval('#settings', (s) => !s.hidden), 'the settings (key field) open by themselves');
  });

  await check('a wrong key: the request fails with the 401 message', async () => {
    await setField('key', 'sk-wrong');
    await setField('temperature', '0');
    const m = await ask('Hello there.');
    const err = await textOf(m, '.error');
    ok(err === `401: ${badKey.json.error.message}`, 'the answer shows the API\'s 401 message', err);
    await shot('wrong-key');
  });

  await check('the right key: the model name comes from /v1/models', async () => {
    await setField('key', KEY);
    await page.waitForFunction(() => document.getElementById('model').textContent === 'scripted');
    ok(true, 'model label is the served name');
    ok(await page.evaluate((k) => localStorage.getItem('llm-fcgi.apiKey') === k, KEY), 'the key is kept in localStorage');
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('model').textContent === 'scripted');
    ok(await page.$eval('#key', (k) => k.value) === KEY, 'after a reload the key is still there');
  });

  await check('a streamed answer with folded reasoning', async () => {
    await page.click('#new-chat');
    const ref = await api('/v1/chat/completions', KEY, { messages: [{ role: 'user', content: 'Hello there.' }], temperature: 0 });
    const m = await ask('Hello there.');
    const reasoning = await textOf(m, '.reasoning-text');
    const content = await textOf(m, '.content');
    const msg = ref.json.choices[0].message;
    ok(reasoning.length > 0 && reasoning === msg.reasoning_content, 'reasoning is the API\'s reasoning_content', reasoning);
    ok(await m.evaluate((x) => !x.querySelector('.reasoning').hidden && !x.querySelector('.reasoning').open),
      'reasoning is shown folded (<details> closed)');
    ok(norm(content) === norm(msg.content), 'content is the API\'s answer', content);
    const chunks = Number(await m.evaluate((x) => x.dataset.chunks));
    ok(chunks > 2, 'the answer came as a stream of chunks', chunks);
    ok(await m.evaluate((x) => x.dataset.finish) === 'stop', 'finish_reason stop shown');
    await m.evaluate((x) => { x.querySelector('.reasoning').open = true; });
    await shot('reasoning');
  });

  await check('tool calls are shown', async () => {
    await page.click('#new-chat');
    await openSettings();
    await setField('tools', JSON.stringify([{ type: 'function', function: { name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]));
    const m = await ask('What is the weather in Paris?');
    const name = await textOf(m, '.tool-call .name');
    const args = await textOf(m, '.tool-call .arguments');
    ok(name === 'get_weather', 'the call\'s function name', name);
    let parsed = null;
    try { parsed = JSON.parse(args); } catch (e) { /* reported below */ }
    ok(parsed && parsed.city === 'Paris', 'the call\'s arguments', args);
    ok(await m.evaluate((x) => x.dataset.finish) === 'tool_calls', 'finish_reason tool_calls');
    await shot('tool-call');
    await setField('tools', '');
  });

  await check('model markup cannot inject HTML', async () => {
    const html = await page.evaluate(() => window.marked.parse('<img src=x onerror="window.pwned=1"> [a](javascript:alert(1))'));
    ok(!/<img/i.test(html) && !/href="javascript/i.test(html), 'raw HTML escaped, javascript: links dropped', html);
  });
}

if (SUITE === 'site') {
  await check('through the production site: key, model, a streamed answer', async () => {
    await openSettings();
    await setField('key', 'sk-not-listed');
    await page.waitForFunction(() => /401/.test(document.getElementById('status').textContent));
    const status = await page.$eval('#status', (s) => s.textContent);
    const bad = await api('/v1/models', 'sk-not-listed');
    ok(status === `401: ${bad.json.error.message}`, 'nginx-side key check: its 401 message is shown', status);
    await shot('site-wrong-key');
    await setField('key', KEY);
    await page.waitForFunction(() => document.getElementById('model').textContent === 'bench');
    await setField('max-tokens', '24');
    await setField('temperature', '0');
    const m = await ask('Once upon a time');
    const content = await textOf(m, '.content');
    ok(content.length > 10, 'an answer arrived', content);
    ok(Number(await m.evaluate((x) => x.dataset.chunks)) > 2, 'streamed in chunks');
    ok(/finish: length/.test(await textOf(m, '.meta')) && /24 tokens/.test(await textOf(m, '.meta')),
      'max tokens is applied (finish length, 24 tokens)', await textOf(m, '.meta'));
    await shot('site-answer');
  });

  await check('the answer shows while it streams; the stop button cancels it', async () => {
    await setField('max-tokens', '3000');
    const m = await ask('Tell me a very long story', { waitDone: false });
    // text on screen while the request is still running: streamed, not
    // shown at the end (3000 tokens of the 87M-parameter model take minutes)
    await page.waitForFunction(() => {
      const a = [...document.querySelectorAll('.msg.assistant')].pop();
      return document.body.classList.contains('busy') && a && a.querySelector('.content').textContent.length > 20;
    }, { timeout: 120000 });
    ok(true, 'the answer appears while it is being generated');
    await shot('site-streaming');
    ok(await page.$eval('#stop', (b) => !b.hidden), 'a Stop button while streaming');
    await page.click('#stop');
    await page.waitForFunction(() => !document.body.classList.contains('busy'));
    ok(await m.evaluate((x) => x.dataset.finish) === 'stopped', 'the answer is marked stopped');
    ok(await page.$eval('#send', (b) => !b.hidden), 'Send is back');
    // the server drops the sequence: no request running any more
    let running = null;
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${BASE}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
      const t = await res.text();
      running = (t.match(/^llm_num_requests_running\{[^}]*\} (\S+)/m) || [])[1];
      if (running === '0') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    ok(running === '0', 'llm-fcgi cancelled the sequence (llm_num_requests_running 0)', running);
    await shot('site-stopped');
  });
}

ok(consoleErrors.length === 0, 'no script errors in the page', consoleErrors.join(' | '));
await browser.close();
rmSync(profile, { recursive: true, force: true });
