// soak.mjs - long-run test of an llm-fcgi server (usually through
// tests/bench/soak.sh): C concurrent clients send a mix of requests for a
// set time while the server's memory, descriptors, KV cache use and the
// latencies are sampled every interval. Writes samples.json, summary.txt
// and plot.svg. Exit status 0 when every request got the intended answer
// (a complete 200, an intended 4xx, or a disconnect the client chose).
// Options: soak_lib.mjs (helpText). Node >= 18, no npm packages.
import fs from 'node:fs';
import path from 'node:path';

import { SseParser } from './load_lib.mjs';
import { parseArgs, helpText, UsageError, rng, pickKind, judge, intervalSample, verdict, renderSvg } from './soak_lib.mjs';

let o;
try {
    o = parseArgs(process.argv.slice(2), process.env);
} catch (e) {
    if (e instanceof UsageError) { console.error(`soak: ${e.message}`); process.exit(2); }
    throw e;
}
if (o.help) { process.stdout.write(helpText()); process.exit(0); }
const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
const out = o.out || `soak-${stamp}`;
fs.mkdirSync(out, { recursive: true });
const root = o.url.replace(/\/v1$/, '');
const headers = { 'content-type': 'application/json', ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}) };
const now = () => performance.now();
const decoder = () => new TextDecoder('utf-8', { fatal: true });

// one request of a kind; resolves to a record, never rejects
async function one(kind, r) {
    const req = kind.build(r, o.model ? { model: o.model } : {});
    const stream = typeof kind.stream === 'function' ? kind.stream(r) : !!kind.stream;
    if (req.body && stream) req.body.stream = true;
    const cutAfter = kind.cutAfter ? kind.cutAfter(r) : Infinity;
    const ac = new AbortController();
    const res = { status: 0, complete: false, utf8: true, json: false, cut: false, timedOut: false, networkError: '' };
    const rec = { kind: kind.name, expect: kind.expect, ttftMs: NaN, tokens: 0 };
    const timer = setTimeout(() => { res.timedOut = true; ac.abort(); }, o.timeout * 1000);
    const t0 = now();
    try {
        const resp = await fetch(root + req.path, { method: 'POST', headers, signal: ac.signal,
            body: req.raw !== undefined ? req.raw : JSON.stringify(req.body) });
        res.status = resp.status;
        const bytes = [];
        if (stream && resp.status === 200) {
            const sse = new SseParser();
            const td = new TextDecoder();
            let chunks = 0;
            for await (const piece of resp.body) {
                bytes.push(Buffer.from(piece));
                for (const ev of sse.feed(td.decode(piece, { stream: true }))) {
                    if (ev.data === undefined) continue;
                    if (ev.data === '[DONE]') { res.complete = true; continue; }
                    let j = null;
                    try { j = JSON.parse(ev.data); } catch { res.complete = false; }
                    if (j && j.error) res.networkError = 'stream-error-event';
                    if (j && j.usage) rec.tokens = j.usage.completion_tokens;
                    if (j && Array.isArray(j.choices) && j.choices.length) {
                        if (!chunks++) rec.ttftMs = now() - t0;
                        if (!j.usage) rec.tokens++;
                    }
                }
                if (chunks >= cutAfter) { res.cut = true; ac.abort(); break; }
            }
        } else {
            bytes.push(Buffer.from(await resp.arrayBuffer()));
        }
        const all = Buffer.concat(bytes);
        if (!res.cut) {
            try { decoder().decode(all); } catch { res.utf8 = false; }
        }
        if (!stream || resp.status !== 200) {
            let j = null;
            try { j = JSON.parse(all.toString()); } catch { /* judged below */ }
            if (resp.status === 200) {
                res.complete = !!j && (Array.isArray(j.choices) || Array.isArray(j.tokens));
                if (j && j.usage) rec.tokens = j.usage.completion_tokens;
            } else {
                res.json = !!(j && j.error && typeof j.error.message === 'string' && typeof j.error.type === 'string');
            }
        }
    } catch (e) {
        if (!res.cut && !res.timedOut) res.networkError = (e.cause && e.cause.code) || e.name || 'error';
    }
    clearTimeout(timer);
    rec.status = res.status;
    rec.e2eMs = now() - t0;
    rec.verdict = judge(kind.expect, res);
    rec.end = now();
    return rec;
}

async function probe() {
    const p = {};
    if (o.serverPid) {
        try {
            const st = fs.readFileSync(`/proc/${o.serverPid}/status`, 'utf8');
            p.rss_kb = Number(/VmRSS:\s+(\d+)/.exec(st)[1]);
            p.fds = fs.readdirSync(`/proc/${o.serverPid}/fd`).length;
            p.threads = Number(/Threads:\s+(\d+)/.exec(st)[1]);
        } catch { p.rss_kb = NaN; p.fds = NaN; }
    }
    try {
        const t = await (await fetch(`${root}/metrics`, { headers, signal: AbortSignal.timeout(10000) })).text();
        const g = name => { const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(t); return m ? Number(m[1]) : NaN; };
        p.kv_used_tokens = g('llm_kv_cache_used_tokens');
        p.kv_capacity_tokens = g('llm_kv_cache_capacity_tokens');
        p.kv_used_blocks = Number.isFinite(p.kv_used_tokens) ? Math.ceil(p.kv_used_tokens / 16) : NaN;
        p.running = g('llm_num_requests_running');
        p.waiting = g('llm_num_requests_waiting');
        p.preemptions = g('llm_num_preemptions_total');
        p.fcgi_dropped = ['protocol', 'timeout', 'evicted', 'closed'].reduce((a, k) => a + (g(`llm_fcgi_dropped_total\\{reason="${k}"\\}`) || 0), 0);
    } catch { p.metrics_error = true; }
    return p;
}

const started = new Date().toISOString();
const tStart = now();
const deadline = tStart + o.duration * 1000;
const totals = { requests: 0, ok: 0, intended4xx: 0, cuts: 0, errors: {} };
let pending = []; // records since the last sample
const samples = [];
let lastSample = tStart;
const firstErrors = [];

async function worker(id) {
    const r = rng(o.seed * 1000 + id);
    while (now() < deadline) {
        const kind = pickKind(r);
        const rec = await one(kind, r);
        totals.requests++;
        if (rec.verdict === 'ok') {
            totals.ok++;
            if (rec.status >= 400) totals.intended4xx++;
            if (kind.expect === 'cut') totals.cuts++;
        } else if (firstErrors.length < 20) {
            firstErrors.push(`${rec.kind}: ${rec.verdict} (status ${rec.status})`);
        }
        pending.push(rec);
    }
}

async function sampler() {
    while (now() < deadline) {
        const wait = Math.min(o.interval * 1000, deadline - now());
        await new Promise(res => setTimeout(res, Math.max(0, wait)));
        const t1 = now();
        const recs = pending;
        pending = [];
        const s = intervalSample(recs, (lastSample - tStart) / 1000, (t1 - tStart) / 1000, await probe());
        lastSample = t1;
        samples.push(s);
        const err = Object.values(s.errors).reduce((a, b) => a + b, 0);
        console.log(`t=${s.t}s req=${s.requests} ok=${s.ok} err=${err} rss=${s.rss_kb ?? '-'}kB fds=${s.fds ?? '-'} ` +
            `kv=${s.kv_used_tokens}/${s.kv_capacity_tokens} p50=${s.e2e_ms.p50}ms p99=${s.e2e_ms.p99}ms`);
    }
}

await Promise.all([sampler(), ...Array.from({ length: o.concurrency }, (_, i) => worker(i))]);
// after the load: the server must come back to idle (no leaked slot)
let idle = null;
for (let i = 0; i < 100; i++) {
    idle = await probe();
    if (idle.running === 0 && idle.waiting === 0) break;
    await new Promise(res => setTimeout(res, 100));
}
if (pending.length) samples.push(intervalSample(pending, (lastSample - tStart) / 1000, (now() - tStart) / 1000, idle));
if (!(idle && idle.running === 0 && idle.waiting === 0)) totals.errors['slots-not-freed'] = 1;
const run = { started, url: o.url, concurrency: o.concurrency, duration: o.duration, interval: o.interval,
    warmup: o.warmup, seed: o.seed, note: o.note, samples, idle, first_errors: firstErrors };
run.verdict = verdict(samples, totals, o);
fs.writeFileSync(path.join(out, 'samples.json'), JSON.stringify(run, null, 1));
fs.writeFileSync(path.join(out, 'plot.svg'), renderSvg(run));
const v = run.verdict;
const text = [
    `soak ${started}: ${o.concurrency} clients, ${o.duration} s, ${o.note || ''}`,
    `requests ${v.requests}: ok ${v.ok} (of which intended 4xx ${v.intended_4xx}, intended disconnects ${v.intended_disconnects}), lost ${v.lost}`,
    `errors ${JSON.stringify(v.errors)}`,
    `RSS after warm-up: ${v.rss_kb_after_warmup ? `${v.rss_kb_after_warmup.min}..${v.rss_kb_after_warmup.max} kB, trend ${v.rss_kb_after_warmup.trend_kb_per_h} kB/h` : '-'}`,
    `open fds after warm-up: ${v.fds_after_warmup ? `${v.fds_after_warmup.min}..${v.fds_after_warmup.max}` : '-'}`,
    `idle after the run: running ${idle && idle.running}, waiting ${idle && idle.waiting}, KV ${idle && idle.kv_used_tokens}/${idle && idle.kv_capacity_tokens} positions`,
    `first errors: ${firstErrors.join('; ') || 'none'}`,
    v.pass ? 'PASS' : 'FAIL',
].join('\n') + '\n';
fs.writeFileSync(path.join(out, 'summary.txt'), text);
process.stdout.write(text + `outputs in ${out}/\n`);
process.exit(v.pass ? 0 : 1);
