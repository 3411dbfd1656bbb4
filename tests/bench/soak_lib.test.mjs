// soak_lib.test.mjs - table-driven unit tests of tests/bench/soak_lib.mjs
// (options, the request mix, verdicts, interval samples, the final summary,
// the SVG). Prints TAP without a plan (soak_e2e.sh folds it in).
import { UsageError, parseArgs, KINDS, rng, pickKind, fuzz, judge, intervalSample, verdict, renderSvg, DEFAULTS } from './soak_lib.mjs';

let n = 0;
const ok = (cond, name) => console.log(`${cond ? 'ok' : 'not ok'} ${++n} - ${name}`);
const throwsUsage = f => { try { f(); return false; } catch (e) { return e instanceof UsageError; } };

// ---- options
{
    const o = parseArgs(['--concurrency', '16', '--duration=3600', '--interval', '60', '--server-pid', '42'], {});
    ok(o.concurrency === 16 && o.duration === 3600 && o.interval === 60 && o.serverPid === 42, 'options parse');
    ok(parseArgs([], { LLM_API_KEY: 'k' }).apiKey === 'k' && parseArgs([], {}).duration === DEFAULTS.duration, 'defaults and the key from the environment');
    for (const bad of [['--concurrency', '0'], ['--duration', 'x'], ['--bogus', '1'], ['--interval'], ['stray']])
        ok(throwsUsage(() => parseArgs(bad, {})), `refused: ${bad.join(' ')}`);
}
// ---- the mix: every kind is drawn, the same seed gives the same requests
{
    const r = rng(7), seen = new Set();
    for (let i = 0; i < 2000; i++) seen.add(pickKind(r).name);
    ok(seen.size === KINDS.length, `all ${KINDS.length} kinds drawn in 2000 picks`);
    const a = rng(3), b = rng(3);
    const ka = KINDS.map(k => JSON.stringify(k.build(a, {}))), kb = KINDS.map(k => JSON.stringify(k.build(b, {})));
    ok(JSON.stringify(ka) === JSON.stringify(kb), 'the same seed builds the same requests');
    const kinds = new Set(KINDS.map(k => k.expect));
    ok(['ok', 'reject', 'either', 'cut'].every(e => kinds.has(e)), 'valid, invalid, fuzzed and disconnecting requests in the mix');
    let bytes = 0, badUtf8 = 0;
    const f = rng(5);
    for (let i = 0; i < 200; i++) {
        const buf = fuzz(f, {});
        bytes += buf.length;
        try { new TextDecoder('utf-8', { fatal: true }).decode(buf); } catch { badUtf8++; }
    }
    ok(bytes > 0 && badUtf8 > 0, `fuzzed bodies include invalid UTF-8 (${badUtf8} of 200)`);
}
// ---- verdicts
for (const [expect, res, want, name] of [
    ['ok', { status: 200, complete: true, utf8: true }, 'ok', 'a complete 200'],
    ['ok', { status: 200, complete: false, utf8: true }, 'incomplete', 'a stream without [DONE]'],
    ['ok', { status: 500, utf8: true }, 'http-500', 'a 500'],
    ['ok', { status: 429, utf8: true }, 'http-429', 'a 429'],
    ['ok', { status: 200, complete: true, utf8: false }, 'invalid-utf8', 'invalid UTF-8 in the answer'],
    ['ok', { networkError: 'ECONNRESET' }, 'network:ECONNRESET', 'a reset connection'],
    ['ok', { timedOut: true }, 'lost', 'no answer in time'],
    ['reject', { status: 400, json: true, utf8: true }, 'ok', 'an intended 400 with an OpenAI error body'],
    ['reject', { status: 400, json: false, utf8: true }, 'not-rejected-400', 'a 400 without an error body'],
    ['reject', { status: 200, complete: true, utf8: true }, 'not-rejected-200', 'an invalid request answered 200'],
    ['either', { status: 200, complete: true, utf8: true }, 'ok', 'a fuzzed body that still parses'],
    ['either', { status: 413, json: true, utf8: true }, 'ok', 'a fuzzed body refused'],
    ['either', { status: 502, utf8: true }, 'http-502', 'a fuzzed body that broke something'],
    ['cut', { status: 200, cut: true, utf8: true }, 'ok', 'a disconnect the client chose'],
    ['cut', { status: 200, complete: true, utf8: true }, 'ok', 'a stream that ended before the client left'],
]) ok(judge(expect, res) === want, `judge: ${name} -> ${want}`);
// ---- samples and the summary
{
    const recs = [
        { verdict: 'ok', expect: 'ok', status: 200, e2eMs: 10, ttftMs: 2, tokens: 5 },
        { verdict: 'ok', expect: 'ok', status: 200, e2eMs: 30, ttftMs: 4, tokens: 7 },
        { verdict: 'ok', expect: 'reject', status: 400, e2eMs: 1, ttftMs: NaN },
        { verdict: 'http-500', expect: 'ok', status: 500, e2eMs: 5, ttftMs: NaN },
    ];
    const s = intervalSample(recs, 0, 2, { rss_kb: 1000, fds: 9 });
    ok(s.requests === 4 && s.ok === 3 && s.errors['http-500'] === 1 && s.tokens === 12 && s.req_per_s === 2 &&
       s.e2e_ms.p50 === 20 && s.rss_kb === 1000, 'interval sample: counts, errors, tokens, percentiles, probe');
    const flat = [0, 60, 120, 180, 240].map((t, i) => ({ t, rss_kb: i ? 5000 + (i % 2) : 3000, fds: 10, errors: {} }));
    const v = verdict(flat, { requests: 10, ok: 10, intended4xx: 2, cuts: 1, errors: {} }, { duration: 240, warmup: 0.1 });
    ok(v.pass && v.rss_kb_after_warmup.min === 5000 && v.rss_kb_after_warmup.max === 5001 && v.fds_after_warmup.max === 10,
       'verdict: flat after warm-up, pass');
    const grow = [0, 60, 120, 180].map(t => ({ t, rss_kb: 1000 + t, fds: 5, errors: t === 120 ? { lost: 1 } : {} }));
    const g = verdict(grow, { requests: 4, ok: 3, errors: {} }, { duration: 180, warmup: 0 });
    ok(!g.pass && g.lost === 1 && g.rss_kb_after_warmup.trend_kb_per_h === 3600, 'verdict: a lost request fails, RSS trend in kB/h');
    const svg = renderSvg({ samples: flat, concurrency: 16, duration: 240, verdict: v, note: 'a<b' });
    ok(svg.startsWith('<svg') && svg.includes('a&lt;b') && (svg.match(/class="frame"/g) || []).length === 4 && (svg.match(/<polyline/g) || []).length >= 3, 'the plot: four panels, a line per sampled series, escaped text');
}
