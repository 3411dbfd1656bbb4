// vision_ttft.mjs - time to first token of a first turn about an image and
// of a follow-up turn about the same image (docs/performance.md), against
// a server at BASE started with a vision pair. Streams each request and
// times the first content chunk; RUNS alternating pairs of turns, each pair
// on a fresh image (its bytes changed, so nothing is cached from before).
// Prints one JSON line per run and the medians.
import fs from 'node:fs';

const BASE = process.env.BASE, IMAGE = process.env.IMAGE, RUNS = Number(process.env.RUNS || 5);
const png = fs.readFileSync(IMAGE);

async function ttft(messages) {
  const t0 = performance.now();
  const res = await fetch(`${BASE}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages, stream: true, max_tokens: 4, temperature: 0 }) });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '', first = null, text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    for (const line of buf.split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const j = JSON.parse(line.slice(6));
      const c = j.choices?.[0]?.delta?.content;
      if (c && first === null) first = performance.now() - t0;
      if (c) text += c;
    }
    buf = buf.slice(buf.lastIndexOf('\n') + 1);
  }
  return { ms: first, text };
}

const firsts = [], follows = [];
for (let r = 0; r < RUNS; r++) {
  // a different image each run: a private chunk after IEND changes the bytes
  // (the hash) but not the pixels
  const img = Buffer.concat([png, Buffer.from(`run${r}-${process.pid}`)]);
  const url = `data:image/png;base64,${img.toString('base64')}`;
  const msgs = [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'Describe the image.' }] }];
  const a = await ttft(msgs);
  msgs.push({ role: 'assistant', content: a.text }, { role: 'user', content: 'What else?' });
  const b = await ttft(msgs);
  firsts.push(a.ms);
  follows.push(b.ms);
  console.log(JSON.stringify({ run: r, first_turn_ms: +a.ms.toFixed(1), follow_up_ms: +b.ms.toFixed(1) }));
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(JSON.stringify({ median_first_turn_ms: +med(firsts).toFixed(1), median_follow_up_ms: +med(follows).toFixed(1) }));
