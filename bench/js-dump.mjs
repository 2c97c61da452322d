// _dump_snapshot() with 100k and 1M recorded entries: seconds, bytes, peak RSS. Each size
// runs in its own process so the RSS figure is its own. Pickle and JSON.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { freshState, machine } from './common.mjs';

if (process.argv[2] === 'child') {
  const { cuda, memory } = await import('../dist/index.js');
  const entries = Number(process.argv[3]);
  const file = process.argv[4];
  const context = process.argv[5] === 'none' ? null : process.argv[5];
  freshState();
  memory._record_memory_history({ enabled: 'all', context, maxEntries: entries });
  // Stacks from a handful of call sites, as in a real loop.
  const sites = [(s) => cuda.alloc(s), (s) => cuda.alloc(s + 512), (s) => cuda.alloc(2 * s)];
  for (let i = 0; i * 3 < entries; i++) sites[i % 3](512 * (1 + (i % 40))).free();
  const rssBefore = process.memoryUsage().rss;
  const t0 = process.hrtime.bigint();
  const r = await memory._dump_snapshot(file);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const peak = process.resourceUsage().maxRSS * 1024;
  console.log(JSON.stringify({ entries, context: process.argv[5], format: r.format, seconds, bytes: r.bytes, peakRss: peak, rssBefore }));
  process.exit(0);
}

const dir = mkdtempSync(join(os.tmpdir(), 'cca-dump-'));
console.log(`_dump_snapshot (${machine()})`);
console.log("stacks 'alloc': every allocation captured a JS stack; the dump symbolizes each capture once (first use)");
console.log('entries     stacks  format   seconds    MiB written   peak RSS MiB (before dump)');
for (const entries of [100_000, 1_000_000]) {
  for (const context of ['none', 'alloc']) {
    for (const ext of ['pickle', 'json']) {
      const file = join(dir, `dump.${ext}`);
      const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, 'child', String(entries), file, context], { encoding: 'utf8' });
      const r = JSON.parse(out.trim().split('\n').pop());
      console.log(`${String(r.entries).padEnd(11)} ${context.padEnd(7)} ${r.format.padEnd(8)} ${r.seconds.toFixed(2).padStart(7)}  ${(r.bytes / 2 ** 20).toFixed(1).padStart(12)}   ${(r.peakRss / 2 ** 20).toFixed(0).padStart(6)} (${(r.rssBefore / 2 ** 20).toFixed(0)})`);
      rmSync(file, { force: true });
    }
  }
}
console.log('target: 1M entries in <= 3 s');
