// harness.mjs - what every e2e SDK suite (*.test.mjs) shares: TAP output and
// a raw-fetch helper against the server at BASE. The suites print one TAP
// line per check without a plan; their .sh wrappers count the lines.
//
//   const h = harness({ prefix: '[model] ', timeoutMs: 60000 });
//   h.ok(cond, name, detail)   one TAP line; detail printed on failure
//   await h.check(name, fn)    runs fn; a throw is a failed check
//   await h.post(path, body[, headers])  -> { status, headers, text, json }
//   h.failed()                 how many checks failed so far
// Environment: BASE (http://127.0.0.1:PORT), API_KEY.
export function harness({ prefix = '', timeoutMs = 30000, detailChars = 800 } = {}) {
  const BASE = process.env.BASE;
  const KEY = process.env.API_KEY || 'none';
  let failed = 0;
  const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

  function ok(cond, name, detail) {
    console.log(`${cond ? 'ok' : 'not ok'} - ${prefix}${name}`);
    if (!cond) {
      failed++;
      if (detail !== undefined) console.log(`# ${JSON.stringify(detail).slice(0, detailChars)}`);
    }
    return cond;
  }
  async function check(name, fn) {
    try { await fn(); } catch (e) { ok(false, `${name}: threw ${e && e.message}`); }
  }
  async function post(path, body, headers = auth) {
    const r = await fetch(`${BASE}${path}`, {
      method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* SSE or not JSON */ }
    return { status: r.status, headers: r.headers, text, json };
  }
  return { ok, check, post, auth, failed: () => failed };
}
