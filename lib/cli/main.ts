#!/usr/bin/env node
// The `cca` command line.
import { Command, InvalidArgumentError as CliArgumentError } from 'commander';
import { runDemo } from '../demo.js';
import { loadSnapshot } from '../snapshot/load.js';
import { formatFor, writeSnapshotFile } from '../snapshot/dump.js';
import { summarize } from '../analysis/summary.js';
import { renderSegments, renderSnapshotSummary, renderTrace } from './format-snapshot.js';

const integer = (name: string, min: number) => (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new CliArgumentError(`${name} expects an integer >= ${min}, got ${v}`);
  return n;
};

const program = new Command();
program
  .name('cca')
  .description('cuda-caching-allocator: a PyTorch-style CUDA caching allocator for Node.js, and its tools.\n' +
    'Snapshot commands read our files and PyTorch\'s (pickle or JSON).');

program
  .command('demo')
  .description('run a small training loop and show allocated vs reserved memory (simulated GPU when none is present)')
  .option('-n, --iterations <n>', 'training iterations', integer('--iterations', 1), 4)
  .action((opts: { iterations: number }) => runDemo({ iterations: Math.min(opts.iterations, 1000) }));

program
  .command('summary')
  .argument('<file>', 'a snapshot (.pickle or .json)')
  .description('what the numbers mean: reserved vs allocated vs cached, fragmentation, history')
  .option('--json', 'print the summary as JSON')
  .action((file: string, opts: { json?: boolean }) => {
    const snap = loadSnapshot(file);
    const s = summarize(snap);
    process.stdout.write(opts.json ? `${JSON.stringify(s, null, 2)}\n` : renderSnapshotSummary(file, s, snap));
  });

program
  .command('segments')
  .argument('<file>', 'a snapshot')
  .description('one line per segment: address, type, stream, pool, sizes, blocks')
  .action((file: string) => {
    process.stdout.write(renderSegments(loadSnapshot(file)));
  });

program
  .command('trace')
  .argument('<file>', 'a snapshot')
  .description('the recorded history, one line per event, with the top stack frame')
  .option('-d, --device <n>', 'device', integer('--device', 0), 0)
  .option('-n, --limit <n>', 'entries to show', integer('--limit', 1), 100)
  .option('-s, --skip <n>', 'entries to skip', integer('--skip', 0), 0)
  .action((file: string, opts: { device: number; limit: number; skip: number }) => {
    process.stdout.write(renderTrace(loadSnapshot(file), opts));
  });

program
  .command('convert')
  .argument('<from>', 'a snapshot (.pickle or .json)')
  .argument('<to>', 'the file to write: .json for JSON, anything else for a pickle memory_viz opens')
  .description('convert between pickle and JSON')
  .action((from: string, to: string) => {
    const r = writeSnapshotFile(loadSnapshot(from), to, formatFor(to));
    process.stderr.write(`wrote ${r.path} (${r.format}, ${r.bytes} bytes)\n`);
  });

program.parseAsync(process.argv).catch((err: Error & { code?: string }) => {
  process.stderr.write(`cca: ${err.message}${err.code ? ` (${err.code})` : ''}\n`);
  process.exitCode = 1;
});
