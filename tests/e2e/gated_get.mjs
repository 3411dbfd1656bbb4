// gated_get.mjs URL BODY OUT GATE [STARTED]: POSTs BODY to URL, writes the
// response (headers, then the body as it comes) to OUT; after the first
// piece of body it stops reading (creating STARTED, if given) until the
// file GATE exists, then reads to the end. Exits 0 when the response ended
// normally, 2 when the connection broke (prints why on stderr).
import http from 'node:http';
import fs from 'node:fs';

const [url, body, out, gate, started] = process.argv.slice(2);
const fd = fs.openSync(out, 'w');
const req = http.request(url, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, res => {
  fs.writeSync(fd, `HTTP ${res.statusCode}\n`);
  for (const [k, v] of Object.entries(res.headers)) fs.writeSync(fd, `${k}: ${v}\n`);
  fs.writeSync(fd, '\n');
  let paused = false;
  res.on('data', d => {
    fs.writeSync(fd, d);
    if (!paused && !fs.existsSync(gate)) {
      paused = true;
      res.pause();
      if (started) fs.writeFileSync(started, '');
      const t = setInterval(() => { if (fs.existsSync(gate)) { clearInterval(t); res.resume(); } }, 20);
    }
  });
  res.on('end', () => { fs.closeSync(fd); process.exit(res.complete ? 0 : 2); });
  res.on('error', e => { console.error('response error:', e.code || e.message); process.exit(2); });
  res.on('aborted', () => { console.error('response aborted'); });
});
req.on('error', e => { console.error('request error:', e.code || e.message); process.exit(2); });
req.end(body);
setTimeout(() => { console.error('timeout'); process.exit(1); }, 600000);
