// Runs a test command on fresh clones of this repository's HEAD, several times in a row,
// optionally with every core kept busy, and prints each run's outcome and wall time: the
// evidence that the suite is never red by chance, and the figure for `npm test`'s time.
//   node scripts/suite-runs.mjs [--runs 10] [--load] [--command "npm run test:all"]
// Each run: `git clone` into a new temporary folder (beside it a link to ../shared, as CI
// has), `npm ci` (untimed), then the command (timed). --load starts one busy loop per core
// (`node -e 'for(;;){}'`) for the whole run, npm ci included. A failed run's log is kept
// and named; the exit status is 1 if any run failed.
import { spawn, execFileSync } from 'node:child_process';
import { cpus, availableParallelism } from 'node:os';
import { existsSync, mkdtempSync, openSync, closeSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    load: { type: 'boolean', default: false },
    command: { type: 'string', default: 'npm run test:all' },
  },
});
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`suite-runs: --runs expects a positive integer, got ${values.runs}`);
  process.exit(2);
}
const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
const shared = resolve(root, '..', 'shared');

/** Runs `command` in `cwd` with its output to `log`; resolves to the exit code. */
function sh(command, cwd, log) {
  const fd = openSync(log, 'a');
  return new Promise((done) => {
    const p = spawn('sh', ['-c', command], { cwd, stdio: ['ignore', fd, fd] });
    p.on('exit', (code, signal) => {
      closeSync(fd);
      done(code ?? (signal ? 128 : 1));
    });
  });
}

const busy = values.load
  ? Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
  : [];
const stopLoad = () => { for (const p of busy) p.kill('SIGKILL'); };
process.on('exit', stopLoad);
process.on('SIGINT', () => process.exit(130));

console.log(`suite-runs: ${runs} x \`${values.command}\` on fresh clones of HEAD (${head} now), ` +
  `${values.load ? `${busy.length} busy loops loading every core` : 'no added load'}; ` +
  `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}`);
let failed = 0;
const times = [];
for (let i = 1; i <= runs; i++) {
  const base = mkdtempSync(join(tmpdir(), 'cca-suite-run-'));
  const dir = join(base, 'main');
  const log = join(base, 'run.log');
  execFileSync('git', ['clone', '--quiet', root, dir]);
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
  if (existsSync(shared)) symlinkSync(shared, join(base, 'shared'));
  const installed = await sh('npm ci --no-audit --no-fund', dir, log);
  const started = process.hrtime.bigint();
  const code = installed === 0 ? await sh(values.command, dir, log) : installed;
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  if (code === 0) {
    times.push(secs);
    console.log(`run ${i} (${commit}): passed in ${secs.toFixed(1)} s`);
    rmSync(base, { recursive: true, force: true });
  } else {
    failed++;
    console.log(`run ${i} (${commit}): FAILED (${installed === 0 ? 'exit' : 'npm ci exit'} ${code}) after ${secs.toFixed(1)} s; log: ${log}`);
  }
}
stopLoad();
if (times.length > 0) {
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`passed ${runs - failed} of ${runs}; wall time min ${sorted[0].toFixed(1)} s, ` +
    `median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} s, max ${sorted[sorted.length - 1].toFixed(1)} s`);
} else {
  console.log(`passed 0 of ${runs}`);
}
process.exitCode = failed ? 1 : 0;
