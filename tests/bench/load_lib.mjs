// load_lib.mjs - the pure parts of the load generator (tests/bench/load.mjs):
// option parsing, the loopback check, prompt building, the SSE parser,
// statistics and the hand-written SVG plot. No I/O here, so every function
// is tested by load_lib.test.mjs without a server.
//
// Contract: functions never throw on client or server input except
// parseArgs / parseConcurrency (which throw UsageError with a message for
// the user) and checkLoopbackAddress (which returns false, never throws).

export class UsageError extends Error {}

// ---------------------------------------------------------------- options

export const DEFAULTS = Object.freeze({
    url: 'http://127.0.0.1:8080/v1',
    apiKey: '',
    model: '',
    endpoint: 'completions',
    concurrency: [1, 2, 4, 8, 16],
    requests: 0, // 0 = auto: max(16, 4 * concurrency) per level
    maxTokens: 128,
    promptTokens: 120,
    temperature: 0,
    sharedPrefix: 0,
    warmup: 1,
    seed: 1,
    ignoreEos: false,
    extra: null, // object merged into every request body (--extra)
    keepAlive: true,
    calibrate: true,
    timeout: 120, // seconds per request
    levelTimeout: 600, // seconds per concurrency level
    out: '',
    note: '',
    raw: false,
    serverPid: 0, // read its resident memory after every level (Linux /proc)
});

// hard bounds: the tool always stops by itself and never floods a machine
export const LIMITS = Object.freeze({
    concurrency: 256,
    levels: 16,
    requests: 10000,
    maxTokens: 32768,
    promptTokens: 131072,
    timeout: 3600,
    levelTimeout: 3600,
    warmup: 64,
});

const HELP = `usage: tests/bench/load.sh [OPTIONS]      (or: node tests/bench/load.mjs [OPTIONS])
       tests/bench/load.sh --serve MODEL.gguf [SERVE OPTIONS] -- [OPTIONS]
       tests/bench/load.sh compare [--out DIR] RESULTS.json...

Drives an OpenAI-compatible server on a loopback address with C concurrent
streaming clients, for each C of a list, and writes results.json + plot.svg.

  --url URL             API base (default ${DEFAULTS.url}); loopback hosts only
  --api-key KEY         sent as Authorization: Bearer KEY (env LLM_API_KEY)
  --model NAME          model field (default: first id of GET /v1/models)
  --endpoint E          completions (default) or chat
  --concurrency LIST    comma list of concurrent clients (default 1,2,4,8,16)
  --requests N          measured requests per level (default max(16, 4*C))
  --max-tokens N        max_tokens of every request (default ${DEFAULTS.maxTokens})
  --prompt-tokens N     approximate prompt length in tokens (default ${DEFAULTS.promptTokens})
  --shared-prefix N     the first ~N of those tokens are the same in every prompt
                        (exercises prefix caching; default 0 = all prompts distinct)
  --temperature T       default 0 (greedy)
  --ignore-eos          send ignore_eos: true (vLLM / llama-server extension)
  --extra JSON          a JSON object merged into every request body, e.g.
                        '{"response_format":{"type":"json_object"}}' to
                        measure constrained decoding against unconstrained
  --no-calibrate        do not use POST /tokenize to size the prompt
  --no-keepalive        a new connection for every request (for servers that
                        close kept-alive connections, e.g. llama-server)
  --warmup N            unmeasured requests before the first level (default ${DEFAULTS.warmup})
  --seed N              seed of the prompt words (default ${DEFAULTS.seed})
  --timeout S           per-request limit in seconds (default ${DEFAULTS.timeout})
  --level-timeout S     per-level limit: no new requests after it, in-flight ones
                        are aborted and counted as errors (default ${DEFAULTS.levelTimeout})
  --out DIR             output directory (default build/bench/load-<UTC time>)
  --note TEXT           free text stored in results.json and the plot title
  --raw                 also store every request's timings in results.json
  --server-pid PID      record the server's resident memory after every level
  -h, --help            this text

Exit status: 0 all requests succeeded, 1 some failed, 2 usage or setup error.
`;

export function helpText() { return HELP; }

function intArg(name, v, lo, hi) {
    if (!/^\d+$/.test(String(v))) throw new UsageError(`${name}: expected an integer, got '${v}'`);
    const n = Number(v);
    if (n < lo || n > hi) throw new UsageError(`${name}: ${n} is outside ${lo}..${hi}`);
    return n;
}

function numArg(name, v, lo, hi) {
    const n = Number(v);
    if (String(v).trim() === '' || !Number.isFinite(n)) throw new UsageError(`${name}: expected a number, got '${v}'`);
    if (n < lo || n > hi) throw new UsageError(`${name}: ${n} is outside ${lo}..${hi}`);
    return n;
}

export function parseConcurrency(s) {
    const parts = String(s).split(',').map((x) => x.trim()).filter((x) => x !== '');
    if (parts.length === 0) throw new UsageError('--concurrency: empty list');
    if (parts.length > LIMITS.levels) throw new UsageError(`--concurrency: at most ${LIMITS.levels} levels`);
    return parts.map((p) => intArg('--concurrency', p, 1, LIMITS.concurrency));
}

// parseArgs(argv, env) -> options object (DEFAULTS filled in) or {help: true}
export function parseArgs(argv, env = {}) {
    const o = { ...DEFAULTS, concurrency: [...DEFAULTS.concurrency] };
    if (env.LLM_API_KEY) o.apiKey = env.LLM_API_KEY;
    const need = (i, name) => {
        if (i + 1 >= argv.length) throw new UsageError(`${name}: missing value`);
        return argv[i + 1];
    };
    for (let i = 0; i < argv.length; i++) {
        let a = argv[i];
        let inline = null;
        const eq = a.indexOf('=');
        if (a.startsWith('--') && eq > 0) { inline = a.slice(eq + 1); a = a.slice(0, eq); }
        const val = () => {
            if (inline !== null) return inline;
            const v = need(i, a); i++; return v;
        };
        switch (a) {
            case '-h': case '--help': return { help: true };
            case '--url': o.url = val(); break;
            case '--api-key': o.apiKey = val(); break;
            case '--model': o.model = val(); break;
            case '--endpoint': {
                const v = val();
                if (v !== 'chat' && v !== 'completions') throw new UsageError(`--endpoint: chat or completions, got '${v}'`);
                o.endpoint = v; break;
            }
            case '--concurrency': o.concurrency = parseConcurrency(val()); break;
            case '--requests': o.requests = intArg(a, val(), 1, LIMITS.requests); break;
            case '--max-tokens': o.maxTokens = intArg(a, val(), 1, LIMITS.maxTokens); break;
            case '--prompt-tokens': o.promptTokens = intArg(a, val(), 1, LIMITS.promptTokens); break;
            case '--shared-prefix': o.sharedPrefix = intArg(a, val(), 0, LIMITS.promptTokens); break;
            case '--temperature': o.temperature = numArg(a, val(), 0, 2); break;
            case '--ignore-eos': o.ignoreEos = true; break;
            case '--extra': {
                const v = val();
                let x;
                try { x = JSON.parse(v); } catch { throw new UsageError(`--extra: not JSON: '${v}'`); }
                if (!x || typeof x !== 'object' || Array.isArray(x)) throw new UsageError('--extra: a JSON object is required');
                for (const k of ['stream', 'stream_options', 'prompt', 'messages'])
                    if (k in x) throw new UsageError(`--extra: '${k}' is set by the tool`);
                o.extra = x; break;
            }
            case '--no-calibrate': o.calibrate = false; break;
            case '--no-keepalive': o.keepAlive = false; break;
            case '--warmup': o.warmup = intArg(a, val(), 0, LIMITS.warmup); break;
            case '--seed': o.seed = intArg(a, val(), 0, 2 ** 31 - 1); break;
            case '--timeout': o.timeout = numArg(a, val(), 0.1, LIMITS.timeout); break;
            case '--level-timeout': o.levelTimeout = numArg(a, val(), 0.1, LIMITS.levelTimeout); break;
            case '--out': o.out = val(); break;
            case '--note': o.note = val(); break;
            case '--raw': o.raw = true; break;
            case '--server-pid': o.serverPid = intArg(a, val(), 1, 2 ** 31 - 1); break;
            default: throw new UsageError(`unknown option '${argv[i]}' (try --help)`);
        }
    }
    if (o.sharedPrefix >= o.promptTokens && o.sharedPrefix > 0)
        throw new UsageError(`--shared-prefix (${o.sharedPrefix}) must be smaller than --prompt-tokens (${o.promptTokens})`);
    let u;
    try { u = new URL(o.url); } catch { throw new UsageError(`--url: not a URL: '${o.url}'`); }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`--url: http or https only, got '${u.protocol}'`);
    if (u.username || u.password) throw new UsageError('--url: no credentials in the URL (use --api-key)');
    return o;
}

export function requestsForLevel(o, c) {
    return o.requests > 0 ? o.requests : Math.min(LIMITS.requests, Math.max(16, 4 * c));
}

// ---------------------------------------------------------------- loopback

// true when the literal address (IPv4 dotted quad or IPv6) is loopback:
// 127.0.0.0/8, ::1, or ::ffff:127.x.y.z. Anything else (including names) is false.
export function isLoopbackAddress(addr) {
    if (typeof addr !== 'string') return false;
    let a = addr.trim().toLowerCase();
    if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
    const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
    if (v4) return v4.slice(1).every((x) => Number(x) <= 255) && Number(v4[1]) === 127;
    const mapped = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
    if (mapped) return isLoopbackAddress(mapped[1]);
    if (!/^[0-9a-f:]+$/.test(a) || !a.includes(':')) return false;
    // expand :: and compare with 0:0:0:0:0:0:0:1
    const halves = a.split('::');
    if (halves.length > 2) return false;
    const head = halves[0] ? halves[0].split(':') : [];
    const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
    if (halves.length === 1 && head.length !== 8) return false;
    const fill = 8 - head.length - tail.length;
    if (fill < 0 || (halves.length === 2 && fill < 1)) return false;
    const groups = [...head, ...Array(halves.length === 2 ? fill : 0).fill('0'), ...tail];
    if (groups.some((g) => g.length === 0 || g.length > 4)) return false;
    const vals = groups.map((g) => parseInt(g, 16));
    return vals.slice(0, 7).every((x) => x === 0) && vals[7] === 1;
}

// ---------------------------------------------------------------- prompts

// common short words: most are one token in BPE vocabularies, a few
// pieces in tiny SentencePiece ones; calibration corrects the count
export const WORDS = (
    'the a cat dog sun tree house girl boy ball red blue green big small happy sad ' +
    'run jump play look see went came said was had saw day night park sky bird fish ' +
    'book toy box cake milk water rain snow wind hill road car bus boat ship star moon ' +
    'friend mom dad baby old new good bad fast slow hot cold up down in out on off ' +
    'and but so then when one two three time home door window bed chair table cup ' +
    'hat shoe coat bag apple bread egg tea soup rock sand sea river lake grass flower ' +
    'leaf king queen farm cow pig hen duck frog bear lion mouse horse sheep goat bee'
).split(' ');

// mulberry32: tiny deterministic PRNG, so prompts are reproducible by --seed
export function prng(seed) {
    let s = seed >>> 0;
    return () => {
        s = (s + 0x6d2b79f5) >>> 0;
        let t = s;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

export function words(n, rand) {
    const out = new Array(Math.max(0, n));
    for (let i = 0; i < out.length; i++) out[i] = WORDS[Math.floor(rand() * WORDS.length)];
    return out.join(' ');
}

// buildPrompt(spec, id): the prompt of request number `id`. spec:
// {seed, sharedWords, uniqueWords}. The shared part is the same for every id
// (seeded by `seed` alone); the unique part starts right after it and is
// seeded by (seed, id), so prompts diverge at their first unique word.
export function buildPrompt(spec, id) {
    const shared = spec.sharedWords > 0 ? words(spec.sharedWords, prng(spec.seed ^ 0x5eed)) : '';
    const uniq = words(spec.uniqueWords, prng((spec.seed * 1000003 + id * 7919 + 1) >>> 0));
    if (!shared) return uniq;
    if (!uniq) return shared;
    return shared + ' ' + uniq;
}

// wordsForTokens(tokens, tokensPerWord): words needed for ~tokens tokens
export function wordsForTokens(tokens, tokensPerWord) {
    if (tokens <= 0) return 0;
    const r = tokensPerWord > 0 && Number.isFinite(tokensPerWord) ? tokensPerWord : 1;
    return Math.max(1, Math.round(tokens / r));
}

// ---------------------------------------------------------------- SSE

// SseParser: feed(text) returns the complete events seen so far, each
// {data: string} (multi-line data joined with \n) or {comment: string}.
// Handles \n, \r\n and \r line ends and events split across chunks.
export class SseParser {
    constructor() { this.buf = ''; this.data = null; }
    feed(text) {
        this.buf += text;
        const events = [];
        for (;;) {
            const m = /\r\n|\r|\n/.exec(this.buf);
            if (!m) break;
            // a lone \r at the very end may be the first half of \r\n
            if (m[0] === '\r' && m.index === this.buf.length - 1) break;
            const line = this.buf.slice(0, m.index);
            this.buf = this.buf.slice(m.index + m[0].length);
            if (line === '') {
                if (this.data !== null) events.push({ data: this.data });
                this.data = null;
            } else if (line.startsWith(':')) {
                events.push({ comment: line.slice(1).trimStart() });
            } else {
                const c = line.indexOf(':');
                const field = c < 0 ? line : line.slice(0, c);
                let value = c < 0 ? '' : line.slice(c + 1);
                if (value.startsWith(' ')) value = value.slice(1);
                if (field === 'data') this.data = this.data === null ? value : this.data + '\n' + value;
            }
        }
        return events;
    }
    // end(): a final event not followed by a blank line (lenient)
    end() {
        const ev = this.feed('\n\n');
        return ev;
    }
}

// chunkText(obj, endpoint): the generated text carried by one stream chunk
export function chunkText(obj) {
    if (!obj || !Array.isArray(obj.choices)) return '';
    let s = '';
    for (const ch of obj.choices) {
        if (!ch) continue;
        if (typeof ch.text === 'string') s += ch.text;
        if (ch.delta && typeof ch.delta.content === 'string') s += ch.delta.content;
        if (ch.delta && typeof ch.delta.reasoning_content === 'string') s += ch.delta.reasoning_content;
    }
    return s;
}

// ---------------------------------------------------------------- stats

// quantile(sorted, q): linear interpolation between closest ranks (numpy's
// default), NaN for an empty array
export function quantile(sorted, q) {
    if (sorted.length === 0) return NaN;
    const pos = (sorted.length - 1) * q;
    const lo = Math.floor(pos);
    const hi = Math.ceil(pos);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

const round3 = (x) => (Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null);

// summary(values) -> {n, mean, min, p50, p90, p99, max}, numbers rounded to
// 3 decimals, null when there are no values
export function summary(values) {
    const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    const n = v.length;
    const mean = n ? v.reduce((a, b) => a + b, 0) / n : NaN;
    return {
        n,
        mean: round3(mean),
        min: round3(n ? v[0] : NaN),
        p50: round3(quantile(v, 0.5)),
        p90: round3(quantile(v, 0.9)),
        p99: round3(quantile(v, 0.99)),
        max: round3(n ? v[n - 1] : NaN),
    };
}

// levelSummary(c, records, wallS): the figures of one concurrency level from
// its request records {ok, error, ttftMs, e2eMs, itlMs: [], promptTokens,
// completionTokens, chunks}
export function levelSummary(c, records, wallS) {
    const ok = records.filter((r) => r.ok);
    const bad = records.filter((r) => !r.ok);
    const kinds = {};
    for (const r of bad) kinds[r.error || 'error'] = (kinds[r.error || 'error'] || 0) + 1;
    const sum = (f) => ok.reduce((a, r) => a + (Number.isFinite(f(r)) ? f(r) : 0), 0);
    const outTok = sum((r) => r.completionTokens);
    const inTok = sum((r) => r.promptTokens);
    const itl = [];
    for (const r of ok) for (const x of r.itlMs) itl.push(x);
    const tpot = ok.filter((r) => r.completionTokens > 1)
        .map((r) => (r.e2eMs - r.ttftMs) / (r.completionTokens - 1));
    const w = wallS > 0 ? wallS : NaN;
    return {
        concurrency: c,
        requests: records.length,
        ok: ok.length,
        errors: bad.length,
        error_kinds: kinds,
        wall_s: round3(wallS),
        completion_tokens: outTok,
        prompt_tokens: inTok,
        tokens_per_s: round3(outTok / w),
        prompt_tokens_per_s: round3(inTok / w),
        requests_per_s: round3(ok.length / w),
        ttft_ms: summary(ok.map((r) => r.ttftMs)),
        itl_ms: summary(itl),
        tpot_ms: summary(tpot),
        e2e_ms: summary(ok.map((r) => r.e2eMs)),
        prompt_tokens_per_request: summary(ok.map((r) => r.promptTokens)),
        completion_tokens_per_request: summary(ok.map((r) => r.completionTokens)),
    };
}

// ---------------------------------------------------------------- metrics

// parseCounters(text): Prometheus text format -> {name: value summed over
// label sets} for the samples whose name ends in _total (counters).
// Malformed lines are skipped.
export function parseCounters(text) {
    const out = {};
    for (const line of String(text).split('\n')) {
        if (!line || line.startsWith('#')) continue;
        const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
        if (!m || !m[1].endsWith('_total')) continue;
        const v = Number(m[3]);
        if (!Number.isFinite(v)) continue;
        out[m[1]] = (out[m[1]] || 0) + v;
    }
    return out;
}

// counterDelta(before, after): the counters that changed, after - before
export function counterDelta(before, after) {
    const d = {};
    for (const [k, v] of Object.entries(after)) {
        const x = v - (before[k] || 0);
        if (x !== 0) d[k] = x;
    }
    return d;
}

// ---------------------------------------------------------------- SVG

export function xmlEscape(s) {
    return String(s).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]);
}

// niceMax(x): a round axis maximum >= x (1, 2, 2.5, 5 times a power of ten)
export function niceMax(x) {
    if (!Number.isFinite(x) || x <= 0) return 1;
    const p = 10 ** Math.floor(Math.log10(x));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x * (1 - 1e-12)) return m * p;
    return 10 * p;
}

// fmt(v): a number for an axis or a label (3 significant figures or so)
export function fmt(v) {
    if (!Number.isFinite(v)) return '-';
    const a = Math.abs(v);
    if (a >= 100) return String(Math.round(v));
    if (a >= 10) return v.toFixed(1).replace(/\.0$/, '');
    return String(Math.round(v * 100) / 100);
}

// one panel: series [{name, color, dash, points: [[c, y], ...]}]
function panel(x0, y0, w, h, title, yLabel, xs, series) {
    const out = [];
    const left = x0 + 56, right = x0 + w - 12, top = y0 + 30, bottom = y0 + h - 44;
    const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
    const ymax = niceMax(ys.length ? Math.max(...ys) * 1.08 : 1); // headroom for value labels
    const lx = xs.map((c) => Math.log2(c));
    const lmin = Math.min(...lx), lmax = Math.max(...lx);
    const px = (c) => (lmax === lmin ? (left + right) / 2
        : left + 14 + ((Math.log2(c) - lmin) / (lmax - lmin)) * (right - left - 28));
    const py = (y) => bottom - (y / ymax) * (bottom - top);
    out.push(`<text x="${x0 + w / 2}" y="${y0 + 16}" class="t">${xmlEscape(title)}</text>`);
    out.push(`<rect x="${left}" y="${top}" width="${right - left}" height="${bottom - top}" class="frame"/>`);
    for (let i = 0; i <= 5; i++) {
        const v = (ymax * i) / 5;
        const y = py(v);
        out.push(`<line x1="${left}" y1="${y}" x2="${right}" y2="${y}" class="grid"/>`);
        out.push(`<text x="${left - 6}" y="${y + 4}" class="yt">${fmt(v)}</text>`);
    }
    for (const c of xs) {
        const x = px(c);
        out.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${bottom}" class="grid"/>`);
        out.push(`<text x="${x}" y="${bottom + 16}" class="xt">${c}</text>`);
    }
    out.push(`<text x="${(left + right) / 2}" y="${bottom + 34}" class="xl">concurrent streams</text>`);
    out.push(`<text x="${x0 + 14}" y="${(top + bottom) / 2}" class="yl" transform="rotate(-90 ${x0 + 14} ${(top + bottom) / 2})">${xmlEscape(yLabel)}</text>`);
    series.forEach((s, k) => {
        const pts = s.points.filter((p) => Number.isFinite(p[1]));
        if (pts.length > 1)
            out.push(`<polyline points="${pts.map((p) => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
        for (const p of pts) {
            out.push(`<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="3.5" fill="${s.color}"/>`);
            if (s.labels) out.push(`<text x="${px(p[0]).toFixed(1)}" y="${(py(p[1]) - 8).toFixed(1)}" class="v">${fmt(p[1])}</text>`);
        }
        const ly = top + 14 + k * 16;
        out.push(`<line x1="${left + 8}" y1="${ly - 4}" x2="${left + 30}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
        out.push(`<text x="${left + 34}" y="${ly}" class="lg">${xmlEscape(s.name)}</text>`);
    });
    return out.join('\n');
}

// renderSvg(results): the plot of results.json as an SVG document string:
// three panels (generated tokens/s; time to first token p50/p99;
// inter-token latency p50/p99) against concurrency on a log2 axis
export function renderSvg(results) {
    const lv = (results.levels || []).filter((l) => l && l.concurrency > 0);
    const xs = [...new Set(lv.map((l) => l.concurrency))].sort((a, b) => a - b);
    const pick = (f) => lv.map((l) => [l.concurrency, f(l)]).filter((p) => p[1] !== null && p[1] !== undefined);
    const errs = lv.filter((l) => l.errors > 0).map((l) => `C=${l.concurrency}: ${l.errors} errors`).join(', ');
    return svgDocument('llm-fcgi load test' + (results.note ? ': ' + results.note : ''), subtitle(results), xs, [
        [{ name: 'tokens/s', color: '#1f77b4', labels: true, points: pick((l) => l.tokens_per_s) }],
        [
            { name: 'p50', color: '#2ca02c', labels: true, points: pick((l) => l.ttft_ms && l.ttft_ms.p50) },
            { name: 'p99', color: '#d62728', dash: '6 4', points: pick((l) => l.ttft_ms && l.ttft_ms.p99) },
        ],
        [
            { name: 'p50', color: '#9467bd', labels: true, points: pick((l) => l.itl_ms && l.itl_ms.p50) },
            { name: 'p99', color: '#ff7f0e', dash: '6 4', points: pick((l) => l.itl_ms && l.itl_ms.p99) },
        ],
    ], errs);
}

// runLabel(results, i): how a run is named in comparisons
export function runLabel(results, i) {
    if (results.note) return results.note;
    if (results.server && results.server.model) return String(results.server.model).replace(/^.*\//, '');
    return `run ${i + 1}`;
}

function subtitle(results) {
    const cfg = results.config || {};
    return [
        results.server && results.server.model ? `model ${results.server.model}` : '',
        cfg.endpoint ? `/v1/${cfg.endpoint === 'chat' ? 'chat/completions' : 'completions'}` : '',
        cfg.prompt_tokens ? `prompt ~${cfg.prompt_tokens} tok` : '',
        cfg.shared_prefix ? `shared prefix ~${cfg.shared_prefix} tok` : '',
        cfg.max_tokens ? `max_tokens ${cfg.max_tokens}` : '',
        results.started ? results.started.replace(/\.\d+Z$/, 'Z') : '',
    ].filter(Boolean).join('  ·  ');
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];

// renderCompareSvg(list): several results.json (e.g. llm-fcgi and
// llama-server) in the same three panels, one colour per run; latency p50
// solid, p99 dashed
export function renderCompareSvg(list) {
    const runs = list.map((r, i) => ({
        label: runLabel(r, i), color: PALETTE[i % PALETTE.length],
        lv: (r.levels || []).filter((l) => l && l.concurrency > 0),
    }));
    const xs = [...new Set(runs.flatMap((r) => r.lv.map((l) => l.concurrency)))].sort((a, b) => a - b);
    const pick = (lv, f) => lv.map((l) => [l.concurrency, f(l)]).filter((p) => p[1] !== null && p[1] !== undefined);
    const lat = (key) => runs.flatMap((r) => [
        { name: `${r.label} p50`, color: r.color, points: pick(r.lv, (l) => l[key] && l[key].p50) },
        { name: `${r.label} p99`, color: r.color, dash: '6 4', points: pick(r.lv, (l) => l[key] && l[key].p99) },
    ]);
    const errs = runs.flatMap((r) => r.lv.filter((l) => l.errors > 0).map((l) => `${r.label} C=${l.concurrency}: ${l.errors} errors`)).join(', ');
    return svgDocument('load test comparison: ' + runs.map((r) => r.label).join(' vs '), list[0] ? subtitle({ ...list[0], server: null, started: null }) : '', xs, [
        runs.map((r) => ({ name: r.label, color: r.color, labels: runs.length <= 2, points: pick(r.lv, (l) => l.tokens_per_s) })),
        lat('ttft_ms'),
        lat('itl_ms'),
    ], errs);
}

// svgDocument(title, sub, xs, [throughput, ttft, itl] series, footer)
function svgDocument(title, sub, xs, series, footer) {
    const W = 1260, H = 440, pw = W / 3;
    const parts = [
        `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 60}" viewBox="0 0 ${W} ${H + 60}" font-family="sans-serif">`,
        '<style>.t{font-size:15px;font-weight:bold;text-anchor:middle}.s{font-size:12px;text-anchor:middle;fill:#444}' +
        '.frame{fill:none;stroke:#888}.grid{stroke:#e4e4e4}.yt{font-size:11px;text-anchor:end}.xt{font-size:11px;text-anchor:middle}' +
        '.xl,.yl{font-size:12px;text-anchor:middle;fill:#333}.lg{font-size:11px}.v{font-size:10px;text-anchor:middle;fill:#333}' +
        '.e{font-size:12px;fill:#b00;text-anchor:middle}</style>',
        `<rect width="${W}" height="${H + 60}" fill="white"/>`,
        `<text x="${W / 2}" y="22" class="t">${xmlEscape(title)}</text>`,
        `<text x="${W / 2}" y="40" class="s">${xmlEscape(sub)}</text>`,
        panel(0, 50, pw, H, 'Aggregate generation throughput', 'generated tokens / s', xs, series[0]),
        panel(pw, 50, pw, H, 'Time to first token', 'ms', xs, series[1]),
        panel(2 * pw, 50, pw, H, 'Inter-token latency', 'ms', xs, series[2]),
    ];
    if (footer) parts.push(`<text x="${W / 2}" y="${H + 52}" class="e">${xmlEscape(footer)}</text>`);
    parts.push('</svg>');
    return parts.join('\n') + '\n';
}

// markdownTable(list): one row per run and level, for docs/performance.md
export function markdownTable(list) {
    const head = ['run', 'C', 'ok/req', 'prompt tok', 'gen tok', 'tok/s', 'req/s', 'TTFT p50 ms', 'TTFT p99 ms', 'ITL p50 ms', 'ITL p99 ms', 'TPOT p50 ms'];
    const rows = [];
    list.forEach((r, i) => {
        for (const l of r.levels || []) {
            rows.push([runLabel(r, i), l.concurrency, `${l.ok}/${l.requests}`,
                fmt(l.prompt_tokens_per_request && l.prompt_tokens_per_request.mean),
                fmt(l.completion_tokens_per_request && l.completion_tokens_per_request.mean),
                fmt(l.tokens_per_s), fmt(l.requests_per_s), fmt(l.ttft_ms && l.ttft_ms.p50), fmt(l.ttft_ms && l.ttft_ms.p99),
                fmt(l.itl_ms && l.itl_ms.p50), fmt(l.itl_ms && l.itl_ms.p99), fmt(l.tpot_ms && l.tpot_ms.p50)]
                .map((x) => String(x).replace(/\|/g, '\\|')));
        }
    });
    const line = (r) => `| ${r.join(' | ')} |`;
    return [line(head), line(head.map((h, i) => (i < 1 ? '---' : '---:'))), ...rows.map(line)].join('\n') + '\n';
}

// table(results): a fixed-width text table of the levels, for the terminal
export function table(results) {
    const head = ['C', 'req', 'ok', 'err', 'prompt', 'gen', 'tok/s', 'req/s', 'TTFT p50', 'TTFT p99', 'ITL p50', 'ITL p99', 'TPOT p50', 'wall s'];
    const rows = (results.levels || []).map((l) => [
        l.concurrency, l.requests, l.ok, l.errors,
        fmt(l.prompt_tokens_per_request && l.prompt_tokens_per_request.mean),
        fmt(l.completion_tokens_per_request && l.completion_tokens_per_request.mean), fmt(l.tokens_per_s), fmt(l.requests_per_s),
        fmt(l.ttft_ms.p50), fmt(l.ttft_ms.p99), fmt(l.itl_ms.p50), fmt(l.itl_ms.p99), fmt(l.tpot_ms.p50), fmt(l.wall_s),
    ].map(String));
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (r) => r.map((x, i) => x.padStart(w[i])).join('  ');
    return [line(head), ...rows.map(line)].join('\n') + '\n(prompt, gen: mean tokens per request; latencies in ms)\n';
}
