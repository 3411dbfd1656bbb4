// load_lib.test.mjs - table-driven unit tests of tests/bench/load_lib.mjs
// (options, loopback check, prompts, SSE parser, statistics, SVG). Prints
// TAP; exit status 1 when a case fails. The plan line is left out when
// TAP_NO_PLAN is set (load_e2e.sh folds these lines into its own plan).
import {
    UsageError, parseArgs, parseConcurrency, requestsForLevel, isLoopbackAddress, buildPrompt, wordsForTokens,
    SseParser, chunkText, parseCounters, counterDelta, renderCompareSvg, markdownTable, runLabel, quantile, summary, levelSummary, niceMax, renderSvg, xmlEscape, table, DEFAULTS,
} from './load_lib.mjs';

let n = 0, failed = 0;
function ok(cond, name) {
    n++;
    if (!cond) failed++;
    console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const throwsUsage = (f) => { try { f(); return false; } catch (e) { return e instanceof UsageError; } };

// ---- loopback addresses
for (const [addr, want] of [
    ['127.0.0.1', true], ['127.255.0.9', true], ['::1', true], ['[::1]', true], ['0:0:0:0:0:0:0:1', true],
    ['0000:0000:0000:0000:0000:0000:0000:0001', true], ['::ffff:127.0.0.1', true],
    ['10.0.0.1', false], ['128.0.0.1', false], ['127.0.0.256', false], ['0.0.0.0', false], ['::', false],
    ['::2', false], ['1::1', false], ['::ffff:10.0.0.1', false], ['localhost', false], ['example.com', false],
    ['', false], [null, false], ['127.0.0.1.nip.io', false], ['fe80::1', false], ['1:2:3:4:5:6:7:8:9', false],
]) ok(isLoopbackAddress(addr) === want, `isLoopbackAddress(${JSON.stringify(addr)}) = ${want}`);

// ---- options
{
    const o = parseArgs([], {});
    ok(o.url === DEFAULTS.url && same(o.concurrency, [1, 2, 4, 8, 16]) && o.temperature === 0, 'defaults');
    ok(parseArgs([], { LLM_API_KEY: 'sk-env' }).apiKey === 'sk-env', 'LLM_API_KEY env sets the key');
    ok(parseArgs(['--api-key', 'sk-a'], { LLM_API_KEY: 'sk-env' }).apiKey === 'sk-a', 'flag wins over env');
    ok(parseArgs(['--help']).help === true, '--help');
    ok(JSON.stringify(parseArgs(['--extra', '{"response_format":{"type":"json_object"}}']).extra) ===
        '{"response_format":{"type":"json_object"}}', '--extra: an object merged into the body');
    for (const bad of ['[1]', 'nope', '{"stream":false}', 'null'])
        ok(throwsUsage(() => parseArgs(["--extra", bad])), `--extra ${bad} refused`);
}
for (const [argv, field, want] of [
    [['--concurrency', '1,3, 5'], 'concurrency', [1, 3, 5]],
    [['--concurrency=8'], 'concurrency', [8]],
    [['--requests', '7'], 'requests', 7],
    [['--max-tokens=64'], 'maxTokens', 64],
    [['--prompt-tokens', '1000', '--shared-prefix', '900'], 'sharedPrefix', 900],
    [['--temperature', '0.7'], 'temperature', 0.7],
    [['--endpoint', 'chat'], 'endpoint', 'chat'],
    [['--ignore-eos'], 'ignoreEos', true],
    [['--no-calibrate'], 'calibrate', false],
    [['--url', 'http://[::1]:9/v1'], 'url', 'http://[::1]:9/v1'],
]) ok(same(parseArgs(argv)[field], want), `parseArgs ${argv.join(' ')} -> ${field} ${JSON.stringify(want)}`);
for (const argv of [
    ['--concurrency', '0'], ['--concurrency', '1,x'], ['--concurrency', ''], ['--concurrency', '300'],
    ['--concurrency', Array(17).fill('1').join(',')], ['--requests', '-1'], ['--requests', '100001'],
    ['--max-tokens'], ['--temperature', '3'], ['--temperature', 'abc'], ['--endpoint', 'embeddings'],
    ['--prompt-tokens', '100', '--shared-prefix', '100'], ['--url', 'ftp://127.0.0.1/'], ['--url', 'nope'],
    ['--url', 'http://u:p@127.0.0.1/v1'], ['--bogus'], ['--timeout', '0'],
]) ok(throwsUsage(() => parseArgs(argv)), `parseArgs rejects ${argv.join(' ')}`);
ok(same(parseConcurrency('2,4'), [2, 4]), 'parseConcurrency 2,4');
for (const [req, c, want] of [[0, 1, 16], [0, 8, 32], [0, 16, 64], [5, 16, 5]])
    ok(requestsForLevel({ requests: req }, c) === want, `requestsForLevel(requests ${req}, C ${c}) = ${want}`);

// ---- prompts
{
    const spec = { seed: 3, sharedWords: 20, uniqueWords: 30 };
    const a = buildPrompt(spec, 1), b = buildPrompt(spec, 2);
    const wa = a.split(' '), wb = b.split(' ');
    ok(wa.length === 50 && wb.length === 50, 'prompt has shared + unique words');
    ok(same(wa.slice(0, 20), wb.slice(0, 20)), 'shared prefix identical across requests');
    ok(!same(wa.slice(20), wb.slice(20)), 'unique parts differ across requests');
    ok(buildPrompt(spec, 1) === a, 'prompts are deterministic');
    ok(buildPrompt({ ...spec, seed: 4 }, 1) !== a, 'seed changes the prompt');
    const none = { seed: 3, sharedWords: 0, uniqueWords: 10 };
    ok(buildPrompt(none, 1).split(' ').length === 10 && buildPrompt(none, 1) !== buildPrompt(none, 2), 'no shared prefix: distinct prompts');
    // distinct requests: no two of 200 prompts share their first 8 unique words
    const heads = new Set();
    for (let i = 0; i < 200; i++) heads.add(buildPrompt(spec, i).split(' ').slice(20, 28).join(' '));
    ok(heads.size === 200, 'unique parts diverge early (200 prompts, first 8 unique words distinct)');
}
for (const [tok, tpw, want] of [[100, 1, 100], [100, 2.5, 40], [1, 4, 1], [0, 1, 0], [10, 0, 10], [10, NaN, 10]])
    ok(wordsForTokens(tok, tpw) === want, `wordsForTokens(${tok}, ${tpw}) = ${want}`);

// ---- SSE
{
    const cases = [
        ['data: a\n\ndata: b\n\n', [{ data: 'a' }, { data: 'b' }]],
        ['data: a\r\n\r\n', [{ data: 'a' }]],
        [': ping\n\ndata: x\n\n', [{ comment: 'ping' }, { data: 'x' }]],
        ['data: l1\ndata: l2\n\n', [{ data: 'l1\nl2' }]],
        ['data:nospace\n\n', [{ data: 'nospace' }]],
        ['event: e\nid: 3\ndata: d\n\n', [{ data: 'd' }]],
        ['data: [DONE]\n\n', [{ data: '[DONE]' }]],
    ];
    for (const [text, want] of cases) {
        // whole, and split after every character
        const whole = new SseParser().feed(text);
        const p = new SseParser(); const bytes = [];
        for (const ch of text) bytes.push(...p.feed(ch));
        ok(same(whole, want) && same(bytes, want), `SSE ${JSON.stringify(text)}`);
    }
    const p = new SseParser();
    ok(same(p.feed('data: part'), []) && same(p.feed('ial\n'), []) && same(p.feed('\n'), [{ data: 'partial' }]), 'SSE event across chunks');
}
for (const [obj, want] of [
    [{ choices: [{ text: 'hi' }] }, 'hi'],
    [{ choices: [{ delta: { content: 'yo' } }] }, 'yo'],
    [{ choices: [{ delta: { role: 'assistant', content: '' } }] }, ''],
    [{ choices: [], usage: { completion_tokens: 3 } }, ''],
    [{ choices: [{ delta: {}, finish_reason: 'stop' }] }, ''],
    [null, ''], [{ choices: 'x' }, ''], [{ choices: [null] }, ''],
]) ok(chunkText(obj) === want, `chunkText ${JSON.stringify(obj)}`);

// ---- Prometheus counters
{
    const text = '# HELP x_total y\n# TYPE x_total counter\nllm_requests_total{model_name="m",status="200"} 5\n' +
        'llm_requests_total{model_name="m",status="429"} 2\nllm_prompt_tokens_total{model_name="m"} 1e3\n' +
        'llm_num_requests_running{model_name="m"} 3\nbad line\nx_total NaN\nvllm:generation_tokens_total 7\n';
    ok(same(parseCounters(text), { llm_requests_total: 7, llm_prompt_tokens_total: 1000, 'vllm:generation_tokens_total': 7 }),
        'parseCounters sums label sets, keeps *_total only, skips bad lines');
    ok(same(counterDelta({ a_total: 1, b_total: 2 }, { a_total: 4, b_total: 2, c_total: 1 }), { a_total: 3, c_total: 1 }),
        'counterDelta: changed counters only');
    ok(same(parseCounters(''), {}) && same(parseCounters(null), {}), 'parseCounters of nothing');
}

// ---- statistics
for (const [arr, q, want] of [
    [[1, 2, 3, 4], 0.5, 2.5], [[1, 2, 3, 4], 0, 1], [[1, 2, 3, 4], 1, 4], [[5], 0.99, 5],
    [[0, 10], 0.99, 9.9], [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 0.9, 10],
]) ok(Math.abs(quantile(arr, q) - want) < 1e-9, `quantile(${JSON.stringify(arr)}, ${q}) = ${want}`);
ok(Number.isNaN(quantile([], 0.5)), 'quantile of nothing is NaN');
{
    const s = summary([3, 1, 2, NaN, 4]);
    ok(s.n === 4 && s.mean === 2.5 && s.min === 1 && s.max === 4 && s.p50 === 2.5, 'summary ignores NaN and sorts');
    const e = summary([]);
    ok(e.n === 0 && e.p50 === null && e.mean === null, 'summary of nothing: nulls');
}
{
    const rec = (ok_, ttft, e2e, itl, p, c, error) => ({ ok: ok_, ttftMs: ttft, e2eMs: e2e, itlMs: itl, promptTokens: p, completionTokens: c, error });
    const s = levelSummary(2, [
        rec(true, 100, 1100, [10, 20, 30], 50, 11),
        rec(true, 200, 700, [40], 60, 6),
        rec(false, NaN, NaN, [], NaN, NaN, 'http_429'),
        rec(false, NaN, NaN, [], NaN, NaN, 'http_429'),
        rec(false, NaN, NaN, [], NaN, NaN, 'timeout'),
    ], 2);
    ok(s.requests === 5 && s.ok === 2 && s.errors === 3, 'levelSummary counts ok and errors');
    ok(same(s.error_kinds, { http_429: 2, timeout: 1 }), 'levelSummary error kinds');
    ok(s.completion_tokens === 17 && s.tokens_per_s === 8.5 && s.prompt_tokens_per_s === 55 && s.requests_per_s === 1, 'levelSummary throughput');
    ok(s.ttft_ms.p50 === 150 && s.itl_ms.n === 4 && s.itl_ms.p50 === 25, 'levelSummary TTFT and ITL over successful requests');
    ok(s.tpot_ms.n === 2 && s.tpot_ms.min === 100 && s.tpot_ms.max === 100, 'levelSummary TPOT = (e2e - ttft) / (tokens - 1)');
    const z = levelSummary(1, [], 0);
    ok(z.requests === 0 && z.tokens_per_s === null, 'levelSummary of nothing');

    // ---- SVG and table from these figures
    for (const [x, want] of [[0.7, 1], [1, 1], [1.2, 2], [2.2, 2.5], [3, 5], [7, 10], [120, 200], [0, 1], [NaN, 1]])
        ok(niceMax(x) === want, `niceMax(${x}) = ${want}`);
    ok(xmlEscape('a<b>&"\'') === 'a&lt;b&gt;&amp;&quot;&#39;', 'xmlEscape');
    const s4 = { ...s, concurrency: 4, errors: 0, tokens_per_s: 20 };
    const results = { note: 'x & <y>', started: '2026-01-01T00:00:00.000Z', server: { model: 'm<1>' }, config: { endpoint: 'chat', prompt_tokens: 120, max_tokens: 64 }, levels: [s, s4] };
    const svg = renderSvg(results);
    ok(svg.startsWith('<svg ') && svg.trim().endsWith('</svg>'), 'SVG document');
    ok((svg.match(/<polyline /g) || []).length === 5, 'SVG: one line per series (tokens/s, TTFT p50/p99, ITL p50/p99)');
    ok(svg.includes('x &amp; &lt;y&gt;') && svg.includes('m&lt;1&gt;') && !svg.includes('<y>'), 'SVG escapes text');
    ok(svg.includes('C=2: 3 errors'), 'SVG reports errors');
    ok(!/NaN|undefined/.test(svg), 'SVG has no NaN or undefined');
    const one = renderSvg({ levels: [z] });
    ok(one.includes('</svg>') && !/NaN|undefined/.test(one), 'SVG of an empty level');
    const tb = table(results);
    ok(tb.split('\n')[1].trim().startsWith('2') && tb.includes('8.5'), 'table rows');

    // ---- comparison of runs
    for (const [r, i, want] of [
        [{ note: 'llama-server' }, 0, 'llama-server'], [{ server: { model: '/m/a.gguf' } }, 1, 'a.gguf'], [{}, 2, 'run 3'],
    ]) ok(runLabel(r, i) === want, `runLabel -> ${want}`);
    const other = { note: 'b|c', levels: [{ ...s4, concurrency: 8 }] };
    const cmp = renderCompareSvg([results, other]);
    ok(cmp.startsWith('<svg ') && (cmp.match(/<polyline /g) || []).length === 5 && !/NaN|undefined/.test(cmp),
        'compare SVG: lines for runs with 2+ levels, no NaN');
    ok(cmp.includes('x &amp; &lt;y&gt; vs b|c'), 'compare SVG title names the runs');
    const md = markdownTable([results, other]).trim().split('\n');
    ok(md.length === 5 && md[0].startsWith('| run | C |') && md[4].startsWith('| b\\|c | 8 |'), 'markdown table: a row per run and level, | escaped');
}

if (!process.env.TAP_NO_PLAN) console.log(`1..${n}`);
process.exitCode = failed ? 1 : 0;
