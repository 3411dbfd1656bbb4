// soak_lib.mjs - the pure parts of the soak program (tests/bench/soak.mjs):
// options, the request mix (valid requests of every kind, intended client
// disconnects, fuzzed bodies), how an outcome is judged, per-interval
// statistics, the final verdict and the SVG plot over time. No I/O here, so
// soak_lib.test.mjs tests it without a server.
//
// Contract: functions never throw on server input; parseArgs throws
// UsageError with a message for the user.

import { prng, quantile, xmlEscape, niceMax, fmt } from './load_lib.mjs';

export class UsageError extends Error {}

export const DEFAULTS = Object.freeze({
    url: 'http://127.0.0.1:8080/v1',
    apiKey: '',
    model: '',
    concurrency: 16,
    duration: 3600, // seconds
    interval: 60, // seconds between samples
    warmup: 0.1, // fraction of the run before RSS and fds must be flat
    serverPid: 0,
    seed: 1,
    timeout: 300, // seconds per request
    out: '',
    note: '',
});

const HELP = `usage: tests/bench/soak.sh [--serve MODEL.gguf [SERVE OPTIONS] --] [OPTIONS]

Runs C concurrent clients for a set time, each sending a mix of requests
(chat and completions, streamed or not, n > 1, logprobs, stop strings,
clients that disconnect mid-stream, fuzzed bodies), and samples the
server's resident memory, open descriptors, KV cache use and latencies
every interval. Writes samples.json, summary.txt and plot.svg to --out.

  --url URL            API base (default ${DEFAULTS.url})
  --api-key KEY        Authorization: Bearer KEY (env LLM_API_KEY)
  --model NAME         model field (default: none)
  --concurrency C      concurrent clients (default ${DEFAULTS.concurrency})
  --duration S         seconds to run (default ${DEFAULTS.duration})
  --interval S         seconds between samples (default ${DEFAULTS.interval})
  --warmup F           fraction of the run before memory must be flat (default ${DEFAULTS.warmup})
  --server-pid PID     read VmRSS and open fds from /proc/PID
  --seed N             request mix seed (default ${DEFAULTS.seed})
  --timeout S          per request (default ${DEFAULTS.timeout})
  --out DIR            output directory (default soak-YYYYmmdd-HHMMSS)
  --note TEXT          a note in the outputs
`;
export function helpText() { return HELP; }

export function parseArgs(argv, env = {}) {
    const o = { ...DEFAULTS, apiKey: env.LLM_API_KEY || '' };
    const num = (k, v, lo, hi) => {
        const x = Number(v);
        if (!Number.isFinite(x) || x < lo || x > hi) throw new UsageError(`--${k} must be a number from ${lo} to ${hi}`);
        return x;
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '-h' || a === '--help') return { help: true };
        const eq = a.indexOf('=');
        const key = a.startsWith('--') ? (eq > 0 ? a.slice(2, eq) : a.slice(2)) : null;
        if (!key) throw new UsageError(`unexpected argument '${a}'`);
        const val = eq > 0 ? a.slice(eq + 1) : argv[++i];
        if (val === undefined) throw new UsageError(`--${key} needs a value`);
        switch (key) {
        case 'url': o.url = val.replace(/\/+$/, ''); break;
        case 'api-key': o.apiKey = val; break;
        case 'model': o.model = val; break;
        case 'concurrency': o.concurrency = num(key, val, 1, 256); break;
        case 'duration': o.duration = num(key, val, 1, 7 * 86400); break;
        case 'interval': o.interval = num(key, val, 1, 3600); break;
        case 'warmup': o.warmup = num(key, val, 0, 0.9); break;
        case 'server-pid': o.serverPid = num(key, val, 0, 2 ** 31); break;
        case 'seed': o.seed = num(key, val, 0, 2 ** 31); break;
        case 'timeout': o.timeout = num(key, val, 1, 3600); break;
        case 'out': o.out = val; break;
        case 'note': o.note = val; break;
        default: throw new UsageError(`unknown option --${key} (try --help)`);
        }
    }
    return o;
}

// ---------------------------------------------------------------- the mix

// Each kind: weight, how to build the request, what counts as success.
// expect: 'ok' (a 200 with a complete body/stream), 'reject' (a 4xx JSON
// error is the right answer), 'either' (fuzzed: 200 or 4xx), 'cut' (the
// client goes away on purpose after `cutAfter` chunks).
const SYSTEM = 'You are a helpful assistant who answers briefly and tells short stories about animals.';
export const KINDS = [
    { name: 'chat', weight: 14, expect: 'ok',
      build: (r, m) => ({ path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: say(r) }], max_tokens: 8 + r.int(56), temperature: r.pick([0, 0.7]), ...m } }) },
    { name: 'chat-stream', weight: 14, expect: 'ok', stream: true,
      build: (r, m) => ({ path: '/v1/chat/completions', body: { messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: say(r) }], max_tokens: 16 + r.int(112), stream: true, stream_options: { include_usage: true }, ...m } }) },
    { name: 'completion-stream-logprobs', weight: 10, expect: 'ok', stream: true,
      build: (r, m) => ({ path: '/v1/completions', body: { prompt: say(r), max_tokens: 8 + r.int(56), stream: true, logprobs: 2, seed: r.int(1e9), ...m } }) },
    { name: 'completion-n', weight: 10, expect: 'ok',
      build: (r, m) => ({ path: '/v1/completions', body: { prompt: say(r), max_tokens: 8 + r.int(24), n: 2 + r.int(2), temperature: 0.8, ...m } }) },
    { name: 'completion-stop', weight: 10, expect: 'ok', stream: r => r.int(2) === 0,
      build: (r, m) => ({ path: '/v1/completions', body: { prompt: say(r), max_tokens: 32 + r.int(64), stop: ['.', ' the'], ...m } }) },
    { name: 'chat-logprobs', weight: 8, expect: 'ok', stream: true,
      build: (r, m) => ({ path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: say(r) }], max_tokens: 8 + r.int(24), logprobs: true, top_logprobs: 3, stream: true, ...m } }) },
    { name: 'completion-echo-prompt-logprobs', weight: 6, expect: 'ok',
      build: (r, m) => ({ path: '/v1/completions', body: { prompt: say(r), max_tokens: 4, echo: true, logprobs: 1, prompt_logprobs: 1, ...m } }) },
    { name: 'disconnect', weight: 10, expect: 'cut', stream: true, cutAfter: r => 1 + r.int(20),
      build: (r, m) => ({ path: '/v1/completions', body: { prompt: say(r), max_tokens: 400, stream: true, ...m } }) },
    { name: 'tokenize', weight: 4, expect: 'ok',
      build: (r, m) => ({ path: '/tokenize', body: { prompt: say(r), ...(m.model ? { model: m.model } : {}) } }) },
    { name: 'fuzzed', weight: 10, expect: 'either',
      build: (r, m) => ({ path: r.pick(['/v1/completions', '/v1/chat/completions']), raw: fuzz(r, m) }) },
    { name: 'invalid', weight: 4, expect: 'reject',
      build: (r, m) => ({ path: '/v1/completions', body: r.pick([{ prompt: 'x', max_tokens: 0 }, { prompt: 'x', n: 0 }, { prompt: 'x', temperature: 9 }, { prompt: [] }, { prompt: 'x', top_logprobs: 3, logprobs: 99 }].map(b => ({ ...b, ...m }))) }) },
];

export function rng(seed) {
    const next = prng(seed);
    return {
        next,
        int: n => Math.floor(next() * n),
        pick: a => a[Math.floor(next() * a.length)],
    };
}

const WORDS = 'once upon a time there was a little cat who liked to play in the sun with her friend the dog they ran and jumped all day long until the moon came out'.split(' ');
export function say(r) {
    const n = 3 + r.int(20);
    const w = [];
    for (let i = 0; i < n; i++) w.push(r.pick(WORDS));
    return w.join(' ');
}

// fuzz(r): a request body with random damage: bytes flipped, cut short,
// invalid UTF-8, values of the wrong type or at the edges, deep nesting
export function fuzz(r, m) {
    const base = JSON.stringify({ prompt: say(r), max_tokens: 4 + r.int(8), ...m });
    switch (r.int(7)) {
    case 0: { // flip bytes
        const b = Buffer.from(base);
        for (let k = 1 + r.int(4); k > 0; k--) b[r.int(b.length)] = r.int(256);
        return b;
    }
    case 1: return Buffer.from(base.slice(0, r.int(base.length))); // cut short
    case 2: return Buffer.concat([Buffer.from('{"prompt":"'), Buffer.from([0xc0 + r.int(64), r.int(256)]), Buffer.from('","max_tokens":3}')]);
    case 3: return Buffer.from(JSON.stringify({ prompt: say(r), max_tokens: r.pick(['9', null, -1, 1.5, '18446744073709551616', [], {}]) }));
    case 4: return Buffer.from(r.pick(['null', '[]', '""', '1e999', '{}', '{"prompt":{"a":1}}', '{"prompt":"x","n":18446744073709551616}']));
    case 5: return Buffer.from('['.repeat(1 + r.int(2000)) + ']'.repeat(r.int(2000)));
    default: return Buffer.from(base.replace(/"max_tokens":\d+/, `"max_tokens":${r.pick(['18446744073709551616', '-0', '1e3', '0x10', '"5"'])}`));
    }
}

// pickKind(r): a kind by weight
export function pickKind(r) {
    const total = KINDS.reduce((a, k) => a + k.weight, 0);
    let x = r.next() * total;
    for (const k of KINDS) {
        if ((x -= k.weight) < 0) return k;
    }
    return KINDS[0];
}

// ---------------------------------------------------------------- verdicts

// judge(kind, result): 'ok' (as intended) or an error category. result:
// {status, networkError, complete (stream ended with [DONE] / body parsed),
// cut (the client aborted on purpose), utf8 (body valid UTF-8), json
// (error body shaped like OpenAI's), timedOut}
export function judge(expect, res) {
    if (res.timedOut) return 'lost';
    if (expect === 'cut' && res.cut) return 'ok';
    if (res.networkError) return 'network:' + res.networkError;
    if (res.utf8 === false) return 'invalid-utf8';
    const s = res.status;
    if (s >= 500) return 'http-' + s;
    if (s === 429) return 'http-429';
    if (expect === 'ok' || expect === 'cut') {
        if (s !== 200) return 'http-' + s;
        return res.complete ? 'ok' : 'incomplete';
    }
    if (expect === 'reject') return s >= 400 && s < 500 && res.json ? 'ok' : 'not-rejected-' + s;
    // either: a 200 that completed, or a 4xx with an OpenAI error body
    if (s === 200) return res.complete ? 'ok' : 'incomplete';
    return s >= 400 && s < 500 && res.json ? 'ok' : 'bad-' + s;
}

// ---------------------------------------------------------------- samples

// interval(records, t0, t1, probe): one sample of the run. records: the
// requests that ended in [t0, t1): {kind, verdict, e2eMs, ttftMs, tokens}
export function intervalSample(records, t0, t1, probe) {
    const e2e = records.filter(r => r.verdict === 'ok' && r.expect !== 'cut' && r.status === 200)
        .map(r => r.e2eMs).sort((a, b) => a - b);
    const ttft = records.filter(r => Number.isFinite(r.ttftMs)).map(r => r.ttftMs).sort((a, b) => a - b);
    const errors = {};
    for (const r of records) if (r.verdict !== 'ok') errors[r.verdict] = (errors[r.verdict] || 0) + 1;
    const round = x => (Number.isFinite(x) ? Math.round(x * 10) / 10 : null);
    return {
        t: Math.round(t1),
        requests: records.length,
        ok: records.filter(r => r.verdict === 'ok').length,
        errors,
        req_per_s: round(records.length / Math.max(1e-9, t1 - t0)),
        tokens: records.reduce((a, r) => a + (r.tokens || 0), 0),
        e2e_ms: { p50: round(quantile(e2e, 0.5)), p90: round(quantile(e2e, 0.9)), p99: round(quantile(e2e, 0.99)) },
        ttft_ms: { p50: round(quantile(ttft, 0.5)), p99: round(quantile(ttft, 0.99)) },
        ...probe,
    };
}

// verdict(samples, totals, o): the pass/fail summary of a run. Flat after
// warm-up: the RSS range of the samples after the warm-up fraction, and its
// linear trend over the same span (kB per hour).
export function verdict(samples, totals, o) {
    const after = samples.filter(s => s.t >= o.duration * o.warmup);
    const rss = after.map(s => s.rss_kb).filter(Number.isFinite);
    const fds = after.map(s => s.fds).filter(Number.isFinite);
    const slope = (xs, ys) => {
        const n = xs.length;
        if (n < 2) return 0;
        const mx = xs.reduce((a, b) => a + b, 0) / n, my = ys.reduce((a, b) => a + b, 0) / n;
        let num = 0, den = 0;
        for (let i = 0; i < n; i++) { num += (xs[i] - mx) * (ys[i] - my); den += (xs[i] - mx) ** 2; }
        return den ? num / den : 0;
    };
    const pts = after.filter(s => Number.isFinite(s.rss_kb));
    const errors = {};
    for (const s of samples) for (const [k, v] of Object.entries(s.errors || {})) errors[k] = (errors[k] || 0) + v;
    for (const [k, v] of Object.entries(totals.errors || {})) errors[k] = (errors[k] || 0) + v;
    return {
        requests: totals.requests,
        ok: totals.ok,
        intended_4xx: totals.intended4xx,
        intended_disconnects: totals.cuts,
        errors,
        lost: errors.lost || 0,
        rss_kb_after_warmup: rss.length ? { min: Math.min(...rss), max: Math.max(...rss), trend_kb_per_h: Math.round(slope(pts.map(s => s.t), pts.map(s => s.rss_kb)) * 3600) } : null,
        fds_after_warmup: fds.length ? { min: Math.min(...fds), max: Math.max(...fds) } : null,
        pass: Object.keys(errors).length === 0,
    };
}

// ---------------------------------------------------------------- plot

// a panel with time (minutes) on x; series [{name, color, dash, points}]
function panel(x0, y0, w, h, title, yLabel, tmax, series) {
    const out = [];
    const left = x0 + 60, right = x0 + w - 12, top = y0 + 28, bottom = y0 + h - 40;
    const ys = series.flatMap(s => s.points.map(p => p[1])).filter(Number.isFinite);
    const ymax = niceMax(ys.length ? Math.max(...ys) * 1.1 : 1);
    const xmax = niceMax(tmax / 60 || 1);
    const px = t => left + (t / 60 / xmax) * (right - left);
    const py = y => bottom - (y / ymax) * (bottom - top);
    out.push(`<text x="${x0 + w / 2}" y="${y0 + 16}" class="t">${xmlEscape(title)}</text>`);
    out.push(`<rect x="${left}" y="${top}" width="${right - left}" height="${bottom - top}" class="frame"/>`);
    for (let i = 0; i <= 4; i++) {
        const v = (ymax * i) / 4, y = py(v);
        out.push(`<line x1="${left}" y1="${y}" x2="${right}" y2="${y}" class="grid"/><text x="${left - 6}" y="${y + 4}" class="yt">${fmt(v)}</text>`);
        const tx = (xmax * i) / 4, x = px(tx * 60);
        out.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${bottom}" class="grid"/><text x="${x}" y="${bottom + 15}" class="xt">${fmt(tx)}</text>`);
    }
    out.push(`<text x="${(left + right) / 2}" y="${bottom + 32}" class="xl">minutes</text>`);
    out.push(`<text x="${x0 + 14}" y="${(top + bottom) / 2}" class="yl" transform="rotate(-90 ${x0 + 14} ${(top + bottom) / 2})">${xmlEscape(yLabel)}</text>`);
    series.forEach((s, k) => {
        const pts = s.points.filter(p => Number.isFinite(p[1]));
        if (pts.length)
            out.push(`<polyline points="${pts.map(p => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ')}" fill="none" stroke="${s.color}" stroke-width="1.8"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
        const ly = top + 14 + k * 15;
        out.push(`<line x1="${left + 8}" y1="${ly - 4}" x2="${left + 28}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/><text x="${left + 32}" y="${ly}" class="lg">${xmlEscape(s.name)}</text>`);
    });
    return out.join('\n');
}

// renderSvg(run): four panels over time: resident memory and open fds; KV
// cache use; request latency p50/p99 and TTFT p50; requests/s and errors
export function renderSvg(run) {
    const s = run.samples || [];
    const tmax = s.length ? s[s.length - 1].t : 1;
    const P = f => s.map(x => [x.t, f(x)]);
    const W = 1000, H = 250;
    const panels = [
        panel(0, 40, W / 2, H, 'server memory and descriptors', 'RSS MiB / open fds', tmax, [
            { name: 'RSS MiB', color: '#1f77b4', points: P(x => (Number.isFinite(x.rss_kb) ? x.rss_kb / 1024 : NaN)) },
            { name: 'open fds', color: '#ff7f0e', dash: '6 4', points: P(x => x.fds) }]),
        panel(W / 2, 40, W / 2, H, 'KV cache', 'positions', tmax, [
            { name: 'used (sampled)', color: '#2ca02c', points: P(x => x.kv_used_tokens) },
            { name: 'capacity', color: '#7f7f7f', dash: '3 3', points: P(x => x.kv_capacity_tokens) }]),
        panel(0, 40 + H, W / 2, H, 'latency per interval', 'ms', tmax, [
            { name: 'request p50', color: '#9467bd', points: P(x => x.e2e_ms && x.e2e_ms.p50) },
            { name: 'request p99', color: '#d62728', dash: '6 4', points: P(x => x.e2e_ms && x.e2e_ms.p99) },
            { name: 'TTFT p50', color: '#17becf', points: P(x => x.ttft_ms && x.ttft_ms.p50) }]),
        panel(W / 2, 40 + H, W / 2, H, 'throughput and errors', 'per second / count', tmax, [
            { name: 'requests/s', color: '#8c564b', points: P(x => x.req_per_s) },
            { name: 'errors (count)', color: '#d62728', points: P(x => Object.values(x.errors || {}).reduce((a, b) => a + b, 0)) }]),
    ];
    const v = run.verdict || {};
    const sub = `${run.started || ''} · ${run.concurrency} clients · ${Math.round((run.duration || 0) / 60)} min · ${v.requests ?? '-'} requests, ${Object.keys(v.errors || {}).length ? 'errors ' + JSON.stringify(v.errors) : 'no errors'}${run.note ? ' · ' + run.note : ''}`;
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${2 * H + 50}" viewBox="0 0 ${W} ${2 * H + 50}" font-family="sans-serif">
<style>.t{font-size:14px;text-anchor:middle;font-weight:bold}.frame{fill:none;stroke:#333}.grid{stroke:#ddd}.yt{font-size:10px;text-anchor:end}.xt{font-size:10px;text-anchor:middle}.xl,.yl{font-size:11px;text-anchor:middle}.lg{font-size:11px}.h{font-size:16px;text-anchor:middle;font-weight:bold}.s{font-size:11px;text-anchor:middle;fill:#444}</style>
<rect width="100%" height="100%" fill="white"/>
<text x="${W / 2}" y="18" class="h">llm-fcgi soak test</text>
<text x="${W / 2}" y="34" class="s">${xmlEscape(sub)}</text>
${panels.join('\n')}
</svg>
`;
}
