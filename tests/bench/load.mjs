#!/usr/bin/env node
// load.mjs - load generator for llm-fcgi (or any OpenAI-compatible server)
// on a loopback address: for each concurrency C of a list, C clients send
// streaming completion (or chat) requests back to back until a fixed
// number of requests is done, then the level's throughput and latencies are
// summarised. Writes OUT/results.json, OUT/plot.svg and OUT/results.txt.
// See docs/benchmarking.md. Only Node's built-in modules are used.
//
// Bounded: every request has a time limit (--timeout), every level one
// (--level-timeout), request counts and concurrency are capped (LIMITS).
// Refuses any URL whose host does not resolve only to loopback addresses,
// and connects to the address it checked.
import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
    UsageError, parseArgs, parseCounters, counterDelta, helpText, requestsForLevel, isLoopbackAddress, buildPrompt, wordsForTokens,
    SseParser, chunkText, levelSummary, renderSvg, table, renderCompareSvg, markdownTable,
} from './load_lib.mjs';

const MAX_RESPONSE_BYTES = 64 << 20;
const here = path.dirname(fileURLToPath(import.meta.url));
const log = (...a) => console.error('load:', ...a);

// ---------------------------------------------------------------- target

async function resolveTarget(o) {
    const u = new URL(o.url);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    let addrs;
    if (isLoopbackAddress(host)) addrs = [{ address: host, family: host.includes(':') ? 6 : 4 }];
    else {
        try { addrs = await dns.lookup(host, { all: true }); } catch (e) {
            throw new UsageError(`--url: cannot resolve '${host}': ${e.code || e.message}`);
        }
    }
    if (!addrs.length || !addrs.every((a) => isLoopbackAddress(a.address)))
        throw new UsageError(`--url: refusing '${u.host}': only loopback addresses (127.0.0.0/8, ::1) may be load-tested` +
            ` (it resolves to ${addrs.map((a) => a.address).join(', ') || 'nothing'})`);
    const secure = u.protocol === 'https:';
    const basePath = u.pathname.replace(/\/+$/, '');
    return {
        secure,
        address: addrs[0].address,
        port: Number(u.port) || (secure ? 443 : 80),
        hostHeader: u.host,
        basePath, // e.g. /v1
        rootPath: basePath.replace(/\/v1$/, ''), // /tokenize lives at the root (vLLM)
        agent: new (secure ? https : http).Agent({ keepAlive: o.keepAlive, maxSockets: 1024 }),
    };
}

// request(target, o, {method, path, body, timeoutMs, signal, onData}) ->
// {status, body?} ; onData(textChunk, nowMs) streams the body instead of
// collecting it (at most MAX_RESPONSE_BYTES either way)
function request(t, o, { method, path: p, body, timeoutMs, signal, onData }) {
    return new Promise((resolve) => {
        const headers = { Host: t.hostHeader, Accept: onData ? 'text/event-stream' : 'application/json' };
        if (o.apiKey) headers.Authorization = `Bearer ${o.apiKey}`;
        let payload = null;
        if (body !== undefined) {
            payload = Buffer.from(JSON.stringify(body));
            headers['Content-Type'] = 'application/json';
            headers['Content-Length'] = payload.length;
        }
        let settled = false;
        const finish = (r) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            if (signal) signal.removeEventListener('abort', onAbort);
            resolve(r);
        };
        const req = (t.secure ? https : http).request({
            host: t.address, port: t.port, method, path: p, headers, agent: t.agent,
            servername: t.secure ? t.hostHeader.replace(/:\d+$/, '') : undefined,
        });
        const timer = setTimeout(() => { finish({ error: 'timeout' }); req.destroy(); }, timeoutMs);
        const onAbort = () => { finish({ error: 'aborted' }); req.destroy(); };
        if (signal) {
            if (signal.aborted) { onAbort(); return; }
            signal.addEventListener('abort', onAbort);
        }
        req.on('error', (e) => finish({ error: 'connection', message: e.code || e.message }));
        req.on('response', (res) => {
            res.setEncoding('utf8');
            const streaming = onData && res.statusCode === 200;
            let bytes = 0;
            let text = '';
            res.on('data', (s) => {
                bytes += Buffer.byteLength(s);
                if (bytes > MAX_RESPONSE_BYTES) { finish({ error: 'too_large' }); req.destroy(); return; }
                if (streaming) {
                    const r = onData(s, performance.now());
                    if (r) { finish(r); req.destroy(); }
                } else text += s;
            });
            res.on('end', () => finish({ status: res.statusCode, body: streaming ? undefined : text, streamed: streaming }));
            // a connection closed early: no 'end'; a stream is then judged by its [DONE]
            res.on('close', () => finish({ status: res.statusCode, body: streaming ? undefined : text, streamed: streaming }));
            res.on('error', (e) => finish({ error: 'connection', message: e.code || e.message }));
        });
        req.end(payload);
    });
}

async function getJson(t, o, p, timeoutMs = 10000, body) {
    const r = await request(t, o, { method: body === undefined ? 'GET' : 'POST', path: p, body, timeoutMs });
    if (r.error) return { error: r.error + (r.message ? ` (${r.message})` : '') };
    let json = null;
    try { json = JSON.parse(r.body); } catch { /* not JSON */ }
    return { status: r.status, json, body: r.body };
}

// ---------------------------------------------------------------- one request

function requestBody(o, prompt, id) {
    const b = { max_tokens: o.maxTokens, temperature: o.temperature, stream: true, stream_options: { include_usage: true } };
    if (o.model) b.model = o.model;
    if (o.endpoint === 'chat') b.messages = [{ role: 'user', content: prompt }];
    else b.prompt = prompt;
    if (o.temperature > 0) b.seed = (o.seed + id) % 2147483647;
    if (o.ignoreEos) b.ignore_eos = true;
    if (o.extra) Object.assign(b, o.extra);
    return b;
}

// runOne -> record {id, ok, error, message, ttftMs, e2eMs, itlMs, promptTokens,
// completionTokens, chunks, usageMissing, startMs}
async function runOne(t, o, prompt, id, signal, runT0) {
    const p = `${t.basePath}/${o.endpoint === 'chat' ? 'chat/completions' : 'completions'}`;
    const sse = new SseParser();
    const rec = { id, ok: false, error: null, ttftMs: NaN, e2eMs: NaN, itlMs: [], promptTokens: NaN, completionTokens: NaN, chunks: 0 };
    let first = null, last = null, done = false, usage = null, finished = null;
    const t0 = performance.now();
    rec.startMs = t0 - runT0;
    const onData = (s, now) => {
        for (const ev of sse.feed(s)) {
            if (ev.data === undefined) continue; // ": ping" comments
            if (ev.data === '[DONE]') { done = true; continue; }
            let obj;
            try { obj = JSON.parse(ev.data); } catch { return { error: 'bad_json', message: ev.data.slice(0, 200) }; }
            if (obj && obj.error) return { error: 'stream_error', message: JSON.stringify(obj.error).slice(0, 300) };
            if (obj && obj.usage) usage = obj.usage;
            const text = chunkText(obj);
            if (text.length > 0) {
                if (first === null) first = now; else rec.itlMs.push(now - last);
                last = now;
                rec.chunks++;
            } else if (finished === null && obj && Array.isArray(obj.choices) && obj.choices.some((c) => c && c.finish_reason)) {
                finished = now;
            }
        }
        return null;
    };
    const r = await request(t, o, { method: 'POST', path: p, body: requestBody(o, prompt, id), timeoutMs: o.timeout * 1000, signal, onData });
    const end = performance.now();
    if (r.error) { rec.error = r.error; rec.message = r.message; return rec; }
    if (r.status !== 200) {
        rec.error = `http_${r.status}`;
        let m = r.body || '';
        try { m = JSON.parse(m).error.message || m; } catch { /* keep text */ }
        rec.message = String(m).replace(/\s+/g, " ").trim().slice(0, 300);
        return rec;
    }
    if (!done) { rec.error = 'incomplete'; rec.message = 'stream ended without data: [DONE]'; return rec; }
    rec.ok = true;
    const firstAt = first !== null ? first : finished !== null ? finished : end;
    rec.ttftMs = firstAt - t0;
    rec.e2eMs = end - t0;
    if (usage && Number.isFinite(usage.completion_tokens)) rec.completionTokens = usage.completion_tokens;
    else { rec.completionTokens = rec.chunks; rec.usageMissing = true; }
    if (usage && Number.isFinite(usage.prompt_tokens)) rec.promptTokens = usage.prompt_tokens;
    return rec;
}

// ---------------------------------------------------------------- server side

// Prometheus text -> {name: sum over label sets} for counters (*_total)
async function serverCounters(t, o, outDir, label) {
    const r = await request(t, o, { method: 'GET', path: `${t.rootPath}/metrics`, timeoutMs: 5000 });
    if (r.error || r.status !== 200 || !r.body) return null;
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(path.join(outDir, `metrics-${label}.txt`), r.body);
    return parseCounters(r.body);
}

// resident memory of a local process (the server), KiB, or null
function rssKib(pid) {
    if (!pid) return null;
    try {
        const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        return m ? Number(m[1]) : null;
    } catch { return null; }
}

// ---------------------------------------------------------------- levels

async function runLevel(t, o, c, n, spec, idBase, runT0) {
    const records = [];
    const ac = new AbortController();
    let next = 0;
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; ac.abort(); }, o.levelTimeout * 1000);
    const cpu0 = process.cpuUsage();
    const load0 = os.loadavg()[0];
    const t0 = performance.now();
    let tEnd = t0;
    const worker = async () => {
        while (!timedOut && next < n) {
            const id = idBase + next++;
            const rec = await runOne(t, o, buildPrompt(spec, id), id, ac.signal, runT0);
            records.push(rec);
            tEnd = Math.max(tEnd, performance.now());
        }
    };
    await Promise.all(Array.from({ length: Math.min(c, n) }, worker));
    clearTimeout(timer);
    const cpu = process.cpuUsage(cpu0);
    const s = levelSummary(c, records, (tEnd - t0) / 1000);
    s.not_started = n - next;
    s.level_timed_out = timedOut;
    s.client_cpu_s = Math.round((cpu.user + cpu.system) / 1000) / 1000;
    s.loadavg_1m = [Math.round(load0 * 100) / 100, Math.round(os.loadavg()[0] * 100) / 100];
    s.usage_missing = records.filter((r) => r.ok && r.usageMissing).length;
    const samples = records.filter((r) => !r.ok).slice(0, 3).map((r) => `${r.error}${r.message ? ': ' + r.message : ''}`);
    if (samples.length) s.error_samples = samples;
    return { summary: s, records };
}

// ---------------------------------------------------------------- main

function defaultOut(kind = 'load') {
    const ts = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    return path.join(here, '..', '..', 'build', 'bench', `${kind}-${ts}`);
}

// compare [--out DIR] RESULTS.json...: several runs in one plot and table
function compare(argv) {
    let out = '';
    const files = [];
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === '--out') {
            if (i + 1 >= argv.length) { log('compare: --out: missing value'); return 2; }
            out = argv[++i];
        } else if (argv[i].startsWith('--out=')) out = argv[i].slice(6);
        else if (argv[i] === '-h' || argv[i] === '--help') {
            process.stdout.write('usage: load.sh compare [--out DIR] RESULTS.json... (writes DIR/compare.svg, DIR/compare.md)\n');
            return 0;
        } else if (argv[i].startsWith('-')) { log(`compare: unknown option '${argv[i]}'`); return 2; }
        else files.push(argv[i]);
    }
    if (files.length === 0 || files.length > 8) { log('compare: give 1 to 8 results.json files'); return 2; }
    const list = [];
    for (const f of files) {
        try {
            const r = JSON.parse(fs.readFileSync(f, 'utf8'));
            if (!r || !Array.isArray(r.levels)) throw new Error('no "levels" array');
            list.push(r);
        } catch (e) { log(`compare: ${f}: ${e.message}`); return 2; }
    }
    out = out || defaultOut('compare');
    fs.mkdirSync(out, { recursive: true });
    const md = markdownTable(list);
    fs.writeFileSync(path.join(out, 'compare.svg'), renderCompareSvg(list));
    fs.writeFileSync(path.join(out, 'compare.md'), md);
    process.stdout.write(md);
    log(`wrote ${path.join(out, 'compare.svg')} and compare.md`);
    return 0;
}

function writeResults(outDir, results) {
    fs.mkdirSync(outDir, { recursive: true });
    const tmp = path.join(outDir, '.results.json.tmp');
    fs.writeFileSync(tmp, JSON.stringify(results, null, 2) + '\n');
    fs.renameSync(tmp, path.join(outDir, 'results.json'));
    fs.writeFileSync(path.join(outDir, 'plot.svg'), renderSvg(results));
    fs.writeFileSync(path.join(outDir, 'results.txt'), table(results));
}

async function calibrate(t, o) {
    // tokens per word of this vocabulary, via vLLM's / llama-server's /tokenize
    const W = 1000; // large enough that the ratio hardly depends on the draw
    const sample = buildPrompt({ seed: o.seed + 99, sharedWords: 0, uniqueWords: W }, 0);
    const r = await getJson(t, o, `${t.rootPath}/tokenize`, 10000, { prompt: sample, content: sample, add_special_tokens: false });
    if (r.error || r.status !== 200 || !r.json) return null;
    const n = Number.isFinite(r.json.count) ? r.json.count : Array.isArray(r.json.tokens) ? r.json.tokens.length : NaN;
    return n > 0 ? n / W : null;
}

async function main() {
    if (process.argv[2] === 'compare') return compare(process.argv.slice(3));
    let o;
    try {
        o = parseArgs(process.argv.slice(2), process.env);
        if (o.help) { process.stdout.write(helpText()); return 0; }
    } catch (e) {
        if (e instanceof UsageError) { log(e.message); return 2; }
        throw e;
    }
    let t;
    try { t = await resolveTarget(o); } catch (e) {
        if (e instanceof UsageError) { log(e.message); return 2; }
        throw e;
    }
    const outDir = o.out || defaultOut();
    const started = new Date().toISOString();

    // the server: its model list (and the model name when not given)
    const models = await getJson(t, o, `${t.basePath}/models`);
    if (models.error) { log(`cannot reach ${o.url}/models: ${models.error}`); return 2; }
    if (models.status === 401 || models.status === 403) { log(`${o.url}/models: HTTP ${models.status} (wrong or missing --api-key?)`); return 2; }
    const ids = models.json && Array.isArray(models.json.data) ? models.json.data.map((m) => m && m.id).filter(Boolean) : [];
    if (!o.model && ids.length) o.model = ids[0];
    const maxLen = models.json && Array.isArray(models.json.data) && models.json.data[0] ? models.json.data[0].max_model_len : undefined;

    // the prompt: words sized by the server's tokenizer when it can tell
    let tpw = o.calibrate ? await calibrate(t, o) : null;
    const calibrated = tpw !== null;
    if (!calibrated) tpw = 1;
    const spec = {
        seed: o.seed,
        sharedWords: wordsForTokens(o.sharedPrefix, tpw),
        uniqueWords: wordsForTokens(o.promptTokens - o.sharedPrefix, tpw),
    };
    log(`target ${o.url} model ${o.model || '(none)'}; prompt ${spec.sharedWords}+${spec.uniqueWords} words` +
        ` (${calibrated ? `${tpw.toFixed(2)} tokens/word from /tokenize` : 'uncalibrated: 1 token/word'}); out ${outDir}`);

    const results = {
        tool: 'llm-fcgi tests/bench/load.mjs',
        format: 1,
        note: o.note || undefined,
        started,
        finished: null,
        machine: {
            cpu: (os.cpus()[0] || {}).model, cpus: os.cpus().length, mem_gib: Math.round(os.totalmem() / 2 ** 30 * 10) / 10,
            os: `${os.type()} ${os.release()}`, node: process.version,
        },
        server: { url: o.url, model: o.model || null, models: ids, max_model_len: maxLen },
        config: {
            endpoint: o.endpoint, concurrency: o.concurrency, requests: o.requests || 'auto: max(16, 4*C)',
            max_tokens: o.maxTokens, prompt_tokens: o.promptTokens, shared_prefix: o.sharedPrefix,
            temperature: o.temperature, ignore_eos: o.ignoreEos, extra: o.extra, warmup: o.warmup, seed: o.seed,
            timeout_s: o.timeout, level_timeout_s: o.levelTimeout,
            prompt_words: { shared: spec.sharedWords, unique: spec.uniqueWords, tokens_per_word: Math.round(tpw * 1000) / 1000, calibrated },
        },
        warmup: null,
        levels: [],
    };

    const runT0 = performance.now();
    if (o.serverPid) results.server.rss_kib_start = rssKib(o.serverPid);
    if (o.warmup > 0) {
        const recs = [];
        for (let i = 0; i < o.warmup; i++) recs.push(await runOne(t, o, buildPrompt(spec, 9000000 + i), 9000000 + i, null, runT0));
        const bad = recs.filter((r) => !r.ok);
        results.warmup = { requests: recs.length, errors: bad.length };
        if (bad.length === recs.length) {
            log(`warm-up failed: ${bad[0].error}${bad[0].message ? ': ' + bad[0].message : ''}`);
            results.warmup.error = `${bad[0].error}${bad[0].message ? ': ' + bad[0].message : ''}`;
            results.finished = new Date().toISOString();
            writeResults(outDir, results);
            return 1;
        }
        log(`warm-up: ${recs.length - bad.length}/${recs.length} ok, prompt ${recs.find((r) => r.ok).promptTokens} tokens`);
    }

    let counters = await serverCounters(t, o, outDir, 'start'); // after the warm-up
    let failed = 0;
    for (let li = 0; li < o.concurrency.length; li++) {
        const c = o.concurrency[li];
        const n = requestsForLevel(o, c);
        const { summary: s, records } = await runLevel(t, o, c, n, spec, (li + 1) * 100000, runT0);
        const after = await serverCounters(t, o, outDir, `after-C${c}`);
        if (after && counters) s.server_counters_delta = counterDelta(counters, after);
        if (after) counters = after;
        if (o.serverPid) s.server_rss_kib = rssKib(o.serverPid);
        if (o.raw) s.raw = records.map((r) => ({ id: r.id, ok: r.ok, error: r.error || undefined, start_ms: Math.round(r.startMs), ttft_ms: r.ttftMs, e2e_ms: r.e2eMs, prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, chunks: r.chunks }));
        results.levels.push(s);
        failed += s.errors + s.not_started;
        log(`C=${c}: ${s.ok}/${n} ok, ${s.tokens_per_s} tok/s, ${s.requests_per_s} req/s, TTFT p50 ${s.ttft_ms.p50} ms, ITL p50 ${s.itl_ms.p50} ms` +
            (s.errors ? `, ${s.errors} errors (${Object.entries(s.error_kinds).map(([k, v]) => `${k} ${v}`).join(', ')})` : '') +
            (s.level_timed_out ? `, level time limit hit (${s.not_started} not started)` : ''));
        results.finished = new Date().toISOString();
        writeResults(outDir, results); // partial results survive an interruption
    }
    t.agent.destroy();
    process.stdout.write(table(results));
    log(`wrote ${path.join(outDir, 'results.json')} and plot.svg`);
    return failed ? 1 : 0;
}

main().then((code) => { process.exitCode = code; }, (e) => { log(e && e.stack || e); process.exitCode = 2; });
