// image_server.mjs - a local HTTP server for the remote-image tests
// (serve_vision.sh): prints its port, then serves
//   /img.png        the golden image v01 (IMAGE env)
//   /redirect-ok    302 to /img.png (same host)
//   /redirect-away  302 to http://not-allowed.invalid/img.png
//   /slow           answers after 30 s
//   /big            a 400 KB body
//   anything else   404
import fs from 'node:fs';
import http from 'node:http';

const image = fs.readFileSync(process.env.IMAGE);
const srv = http.createServer((req, res) => {
  if (req.url === '/img.png') { res.writeHead(200, { 'content-type': 'image/png' }); res.end(image); return; }
  if (req.url === '/redirect-ok') { res.writeHead(302, { location: '/img.png' }); res.end(); return; }
  if (req.url === '/redirect-away') { res.writeHead(302, { location: 'http://not-allowed.invalid/img.png' }); res.end(); return; }
  if (req.url === '/slow') { setTimeout(() => { res.writeHead(200); res.end(image); }, 30000); return; }
  if (req.url === '/big') { res.writeHead(200, { 'content-type': 'image/png' }); res.end(Buffer.alloc(400 * 1024)); return; }
  res.writeHead(404); res.end('no');
});
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
