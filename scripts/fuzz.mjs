// npm run fuzz [-- --cases N --seed S --workers W --timeout-ms T]
// Fuzzes the snapshot reader and every cca command (see test/fuzz/runner.mjs) and prints
// cases, clean errors, valid results, crashes and hangs. Exit status 1 if any crash or hang;
// their inputs are kept in fuzz-failures/ to reproduce.
import { parseArgs } from 'node:util';
import os from 'node:os';
import { runFuzz } from '../test/fuzz/runner.mjs';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '100000' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    workers: { type: 'string', default: String(Math.max(1, os.availableParallelism())) },
    'timeout-ms': { type: 'string', default: '20000' },
  },
});
const cases = Number(values.cases);
const seed = Number(values.seed);
const started = Date.now();
let shown = 0;
const stats = await runFuzz({
  cases, seed, workers: Number(values.workers), timeoutMs: Number(values['timeout-ms']), failuresDir: 'fuzz-failures',
  onProgress: (s) => {
    if (process.stderr.isTTY && (s.cases - shown >= 500 || s.cases === cases)) {
      shown = s.cases;
      process.stderr.write(`\r${s.cases}/${cases} cases, ${s.crashes} crashes, ${s.hangs} hangs`);
    }
  },
});
if (process.stderr.isTTY) process.stderr.write('\n');
const secs = (Date.now() - started) / 1000;
console.log(`fuzz: seed ${seed}, ${stats.cases} cases in ${secs.toFixed(1)} s on ${os.cpus()[0]?.model ?? 'unknown CPU'} (${values.workers} workers)`);
console.log(`  valid results   ${stats.valid} (of which ${stats.commandRefusals} had a command refuse with a code)`);
console.log(`  clean errors    ${stats.cleanErrors}`);
console.log(`  crashes         ${stats.crashes}`);
console.log(`  hangs           ${stats.hangs}`);
console.log('  codes:', Object.entries(stats.codes).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', '));
console.log('  by kind:');
for (const [label, l] of Object.entries(stats.byLabel).sort()) {
  console.log(`    ${label.padEnd(40)} ${String(l.valid).padStart(6)} valid ${String(l.cleanErrors).padStart(6)} refused ${l.crashes} crashes ${l.hangs} hangs`);
}
for (const f of stats.failures.slice(0, 20)) console.log(`  ${f.outcome}: case ${f.case} (${f.label}): ${JSON.stringify(f.detail)}`);
if (stats.crashes + stats.hangs > 0) process.exitCode = 1;
