// vision_page.test.mjs - the chat page with an image, in Debian's chromium
// (headless, puppeteer-core), against a vision server (serve_vision.sh: the
// gemma3 pair): an image attached with the file picker, shown as a
// thumbnail, sent with a question; the conversation shows the image and
// the model's answer, which is the API's answer to the same request.
// Screenshot in $SHOTS. Emits TAP lines.
import puppeteer from 'puppeteer-core';
import fs from 'node:fs';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
// chromium's file chooser takes no ".." in a path (the suite's fixture dir has one)
const IMAGE = resolve(process.env.IMAGE);
const SHOTS = process.env.SHOTS || 'screenshots';
const { ok, check, failed } = harness({ prefix: '[vision page] ' });
mkdirSync(SHOTS, { recursive: true });

const profile = mkdtempSync(join(tmpdir(), 'llm-chromium-'));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', `--user-data-dir=${profile}`],
});
const page = await browser.newPage();
page.setDefaultTimeout(90000); // a loaded CI machine can be slow to start chromium's work
await page.setViewport({ width: 1000, height: 760 });
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));

await check('an image attached, sent and shown', async () => {
  await page.goto(`${BASE}/`, { waitUntil: 'load' });
  await page.evaluate(() => { document.getElementById('temperature').value = '0'; document.getElementById('max-tokens').value = '8'; });
  const input = await page.$('#file');
  await input.uploadFile(IMAGE);
  await page.waitForSelector('#attachments .thumb img');
  ok(await page.$eval('#attachments .thumb img', (i) => i.src.startsWith('data:image/png;base64,')), 'the picked image shows as a thumbnail');
  await page.click('#input');
  await page.type('#input', 'Describe the image.');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 1 && !document.body.classList.contains('busy'), { timeout: 60000 });
  const shown = await page.$eval('.msg.user img.attached', (i) => i.complete && i.naturalWidth);
  ok(shown === 224, 'the conversation shows the sent image', shown);
  ok(await page.$$eval('#attachments .thumb', (t) => t.length) === 0, 'the attachments strip is emptied after sending');
  const answer = await page.$eval('.msg.assistant .content', (c) => c.textContent.trim());
  const res = await fetch(`${BASE}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: `data:image/png;base64,${fs.readFileSync(IMAGE).toString('base64')}` } },
      { type: 'text', text: 'Describe the image.' }] }], temperature: 0, max_tokens: 8 }) });
  const want = (await res.json()).choices[0].message.content.trim();
  ok(answer.length > 0 && answer.replace(/\s+/g, ' ') === want.replace(/\s+/g, ' '), 'the page shows the model\'s answer about the image', { answer, want });
  await page.screenshot({ path: join(SHOTS, 'vision-page.png') });
  ok(fs.statSync(join(SHOTS, 'vision-page.png')).size > 1000, 'screenshot taken');
  ok(errors.length === 0, 'no script errors', errors);
});

await browser.close();
rmSync(profile, { recursive: true, force: true });
process.exit(failed() ? 1 : 0);
