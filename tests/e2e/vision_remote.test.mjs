// vision_remote.test.mjs - remote and file:// images end to end against a
// local HTTP server (image_server.mjs at IMG_BASE). MODE=private: the server
// allows host 127.0.0.1 but not private addresses; MODE=open: it also
// allows private addresses (--media-allow-private), a 2 s time limit and
// --media-dir (MEDIA_DIR). Emits TAP.
import { harness } from './harness.mjs';

const BASE = process.env.BASE, IMG = process.env.IMG_BASE, MODE = process.env.MODE;
const { ok, failed } = harness({ detailChars: 400 });
async function chat(url) {
  const res = await fetch(`${BASE}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } },
      { type: 'text', text: 'Describe the image.' }] }], max_tokens: 3, temperature: 0 }),
  });
  return { status: res.status, j: await res.json() };
}
const err = (r, re, code) => r.status === 400 && r.j.error.param === 'messages[0].content[0]' && re.test(r.j.error.message) &&
  (!code || r.j.error.code === code);

if (MODE === 'private') {
  let r = await chat(`${IMG}/img.png`);
  ok(err(r, /loopback, private or link-local/, 'image_url_not_allowed'), 'an allowed host that is a loopback address -> 400 (SSRF)', r);
  r = await chat(IMG.replace('127.0.0.1', 'localhost') + '/img.png');
  ok(err(r, /not on the server's allow-list/), 'a host not on the allow-list -> 400', r);
  r = await chat('ftp://127.0.0.1/x.png');
  ok(err(r, /unsupported URL scheme/), 'an ftp:// URL -> 400', r);
} else {
  let r = await chat(`${IMG}/img.png`);
  const want = (await chat(`data:image/png;base64,${process.env.IMAGE_B64}`)).j.choices?.[0]?.message?.content;
  ok(r.status === 200 && r.j.choices[0].message.content === want, 'a remote image from an allowed host: same answer as the data URL', { r, want });
  r = await chat(`${IMG}/redirect-ok`);
  ok(r.status === 200 && r.j.choices[0].message.content === want, 'a redirect within the allowed host is followed', r);
  r = await chat(`${IMG}/redirect-away`);
  ok(err(r, /not-allowed.invalid' is not on the server's allow-list/), 'a redirect to a host off the list -> 400', r);
  const t0 = Date.now();
  r = await chat(`${IMG}/slow`);
  ok(err(r, /timed out/, 'image_fetch_timeout') && Date.now() - t0 < 10000, 'a fetch past --media-timeout -> 400 timed out', r);
  r = await chat(`${IMG}/big`);
  ok(err(r, /larger than the limit/), 'a remote image past --max-image-bytes -> 400', r);
  r = await chat(`${IMG}/missing`);
  ok(err(r, /HTTP status 404/), 'a remote 404 -> 400 naming the status', r);
  r = await chat(`file://${process.env.MEDIA_DIR}/v01_png_rgb_224x224.png`);
  ok(r.status === 200 && r.j.choices[0].message.content === want, 'file:// under --media-dir', r);
  r = await chat('file:///etc/hostname');
  ok(err(r, /outside the media directory|no such file/), 'file:// outside --media-dir -> 400', r);
}
process.exit(failed() ? 1 : 0);
