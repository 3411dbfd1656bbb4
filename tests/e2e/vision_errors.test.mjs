// vision_errors.test.mjs - bad image inputs get a 400 naming the content
// part, end to end (server: the gemma3 pair with --max-images 2
// --max-image-bytes 300k --max-image-pixels 1000000, see serve_vision.sh).
// Emits TAP.
import fs from 'node:fs';
import zlib from 'node:zlib';
import { harness } from './harness.mjs';

const BASE = process.env.BASE;
const GOLDEN = process.env.GOLDEN_DIR;
const { ok, failed } = harness({ detailChars: 400 });

const png = fs.readFileSync(`${GOLDEN}/vision/images/v01_png_rgb_224x224.png`);
const b64 = (b) => Buffer.from(b).toString('base64');

// a valid PNG of w x h pixels of one colour (compresses to a few bytes)
function solidPng(w, h) {
  const crcTable = Array.from({ length: 256 }, (_, n0) => {
    let c = n0;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => { let c = ~0; for (const x of buf) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8); return (~c) >>> 0; };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;
  const raw = Buffer.alloc((w * 3 + 1) * h, 0x7f);
  for (let y = 0; y < h; y++) raw[y * (w * 3 + 1)] = 0;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

async function chat(content, extra = {}) {
  const res = await fetch(`${BASE}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 2, ...extra }),
  });
  let j = null;
  try { j = await res.json(); } catch { /* not JSON */ }
  return { status: res.status, j };
}
const img = (url) => ({ type: 'image_url', image_url: { url } });
const bad = (r, param, re) => r.status === 400 && r.j?.error?.param === param && re.test(r.j.error.message) &&
  r.j.error.type === 'invalid_request_error';

let r = await chat([{ type: 'text', text: 'x' }, img(`data:image/png;base64,${b64(Buffer.from('this is not an image at all, just text'))}`)]);
ok(bad(r, 'messages[0].content[1]', /not a PNG, JPEG or WebP/), 'random bytes as a PNG data URL -> 400 naming the part', r);
r = await chat([img(`data:image/png;base64,${b64(png.subarray(0, png.length >> 1))}`)]);
ok(bad(r, 'messages[0].content[0]', /truncated or corrupt/), 'half a PNG -> 400 truncated or corrupt', r);
r = await chat([img(`data:text/plain;base64,${b64('hello')}`)]);
ok(bad(r, 'messages[0].content[0]', /not an image type/), 'data:text/plain -> 400', r);
r = await chat([img(`data:application/octet-stream;base64,${b64(png)}`)]);
ok(bad(r, 'messages[0].content[0]', /not an image type/), 'data:application/octet-stream with a valid PNG -> 400', r);
r = await chat([img('data:image/png,rawbytes')]);
ok(bad(r, 'messages[0].content[0]', /base64/), 'data:image/png without ;base64 -> 400', r);
r = await chat([img('data:image/png;base64,@@@not base64@@@')]);
ok(bad(r, 'messages[0].content[0]', /not valid base64/), 'invalid base64 -> 400', r);
r = await chat([img(`data:image/gif;base64,${b64(Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;'))}`)]);
ok(bad(r, 'messages[0].content[0]', /GIF images are not supported/), 'a GIF -> 400 unsupported format', r);
r = await chat([img(`data:image/png;base64,${b64(Buffer.concat([png, Buffer.alloc(400 * 1024)]))}`)]);
ok(bad(r, 'messages[0].content[0]', /larger than the limit of/), 'more bytes than --max-image-bytes -> 400', r);
r = await chat([img(`data:image/png;base64,${b64(solidPng(1200, 1000))}`)]);
ok(bad(r, 'messages[0].content[0]', /more than the limit of 1000000/), 'more pixels than --max-image-pixels -> 400', r);
const u = `data:image/png;base64,${b64(png)}`;
r = await chat([img(u), img(u), img(u)]);
ok(bad(r, 'messages[0].content[2]', /at most 2 images/), 'more images than --max-images -> 400', r);
r = await chat([{ type: 'text', text: 'two <__media__> markers <__media__>' }, img(u)]);
ok(r.status === 400 && /3 image markers/.test(r.j?.error?.message || ''), 'image markers in the text beyond the images -> 400', r);
r = await chat([img('http://127.0.0.1:9/x.png')]);
ok(bad(r, 'messages[0].content[0]', /remote images are disabled/), 'a remote URL on a server without --media-domains -> 400', r);
r = await chat([img('file:///etc/passwd')]);
ok(bad(r, 'messages[0].content[0]', /file:\/\/ images are disabled/), 'file:// without --media-dir -> 400', r);
r = await chat([{ type: 'image_url', image_url: { url: u, detail: 'ultra' } }]);
ok(r.status === 400 && /detail/.test(r.j?.error?.message || ''), 'image_url.detail other than auto/low/high -> 400', r);
r = await chat([{ type: 'image_url', image_url: {} }]);
ok(bad(r, 'messages[0].content[0]', /needs 'image_url'/), 'image_url without url -> 400', r);
// TGI's format for a bad markdown image
const tg = await fetch(`${BASE}/generate`, { method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ inputs: 'see ![](data:image/png;base64,AAAA) this', parameters: { max_new_tokens: 2 } }) });
const tj = await tg.json();
ok(tg.status === 422 && tj.error_type === 'validation' && /inputs image 1/.test(tj.error), 'TGI: a bad markdown image -> 422 validation error', tj);
// a good request still works after all that
r = await chat([img(u), { type: 'text', text: 'Describe the image.' }]);
ok(r.status === 200 && r.j.choices[0].message.content !== undefined, 'the server still answers a good image request');

process.exit(failed() ? 1 : 0);
