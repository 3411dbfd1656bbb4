// grammar_score.mjs - scores `llm-fcgi grammar --batch` output for
// test_grammar_batch.sh (TAP lines, no plan).
//   node grammar_score.mjs suite2jsonl [--draft URI] FILE...   JSON-Schema-Test-
//        Suite files -> batch lines {"schema","valid","invalid","name"} on
//        stdout; --draft URI gives each object schema that "$schema" (the
//        suite's draft folders leave the draft to the validator)
//   node grammar_score.mjs bench CASES OUT FORMAT_ONLY MIN_CORRECT
//   node grammar_score.mjs suite CASES OUT MIN_TESTS
// A schema is fully correct when it compiled, every valid instance was
// accepted and every invalid one rejected. Invalid instances accepted must
// be 0 (for the bench: apart from those invalid only by a `format`).
import fs from 'node:fs';

const [mode, ...args] = process.argv.slice(2);
const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const ok = (c, name) => console.log(`${c ? 'ok' : 'not ok'} - ${name}`);

if (mode === 'suite2jsonl') {
  let draft = null;
  if (args[0] === '--draft') { draft = args[1]; args.splice(0, 2); }
  for (const f of args) {
    const base = f.split('/').pop();
    for (const g of JSON.parse(fs.readFileSync(f, 'utf8'))) {
      const valid = g.tests.filter((t) => t.valid).map((t) => t.data);
      const invalid = g.tests.filter((t) => !t.valid).map((t) => t.data);
      const schema = draft && g.schema && typeof g.schema === 'object' && !Array.isArray(g.schema)
        ? { $schema: draft, ...g.schema } : g.schema;
      console.log(JSON.stringify({ file: base, name: g.description, schema, valid, invalid }));
    }
  }
} else if (mode === 'bench' || mode === 'suite') {
  const [casesF, outF] = args;
  const cases = lines(casesF), outs = lines(outF);
  ok(cases.length === outs.length, `${mode}: one output line per input line (${outs.length}/${cases.length})`);
  const formatOnly = mode === 'bench' ? JSON.parse(fs.readFileSync(args[2], 'utf8')) : {};
  let correct = 0, compiled = 0, invAcc = 0, invAccFmt = 0, validRej = 0, testsOk = 0, tests = 0;
  const masks = [], compiles = [];
  cases.forEach((c, i) => {
    const o = outs[i] || { compiled: false, valid: [], invalid: [], mask_us: [] };
    const fmt = new Set(formatOnly[`${c.dataset}/${c.file}`] || []);
    if (o.compiled) { compiled++; compiles.push(o.compile_us); }
    masks.push(...o.mask_us);
    const v = o.valid.filter(Boolean).length, inv = o.invalid.filter(Boolean).length;
    o.invalid.forEach((a, k) => { if (a) { if (fmt.has(k)) invAccFmt++; else invAcc++; } });
    validRej += o.valid.length - v;
    tests += o.valid.length + o.invalid.length;
    testsOk += v + (o.invalid.length - inv);
    if (o.compiled && v === c.valid.length && inv === 0) correct++;
  });
  const pct = (a, q) => { a = [...a].sort((x, y) => x - y); return a.length ? a[Math.min(a.length - 1, Math.floor(q * a.length))] : 0; };
  console.log(`# ${mode}: ${cases.length} schemas, ${compiled} compiled, ${correct} fully correct (${(100 * correct / cases.length).toFixed(1)}%), ` +
              `tests ${testsOk}/${tests}, valid rejected ${validRej}, invalid accepted ${invAcc} (+${invAccFmt} format-only)`);
  console.log(`# masks ${masks.length}: p50 ${pct(masks, 0.5)} us, p99 ${pct(masks, 0.99)} us; compile p50 ${pct(compiles, 0.5)} us`);
  ok(invAcc === 0, `${mode}: no invalid instance accepted (got ${invAcc})`);
  if (mode === 'bench')
    ok(correct >= +args[3], `bench: at least ${args[3]} schemas fully correct (got ${correct})`);
  else
    ok(testsOk >= +args[2], `suite: at least ${args[2]} tests right (got ${testsOk} of ${tests})`);
}
