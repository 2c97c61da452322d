#!/usr/bin/env node
// The `cca` command line.
import { Command, Option, InvalidArgumentError as CliArgumentError } from 'commander';
import { runDemo } from '../demo.js';
import { DEFAULT_MAX_SNAPSHOT_BYTES, loadSnapshot, parseSnapshot } from '../snapshot/load.js';
import { readStandardInput } from '../files.js';
import { internFrames } from '../snapshot/intern.js';
import { formatFor, writeSnapshotFile } from '../snapshot/dump.js';
import { replaceFile } from '../files.js';
import { summarize } from '../analysis/summary.js';
import { renderSegments, renderSnapshotSummary, renderSummaryTable, renderTrace } from './format-snapshot.js';
import { fragmentation } from '../analysis/fragmentation.js';
import { diffSnapshots } from '../analysis/diff.js';
import { findLeaks } from '../analysis/leaks.js';
import { replayOnSim } from '../replay/replay.js';
import { renderDiff, renderFragmentation, renderLeaks, renderReplay, renderWhatIf } from './format-analysis.js';
import { whatIf } from '../replay/what-if.js';
import { ENGINE_NAMES, replayEngine, type EngineName } from '../replay/engine.js';
import cliProgress from 'cli-progress';
import { basename } from 'node:path';
import { viewerHtml } from '../viewer/html.js';
import { humanBytes } from '../format.js';
import { readFileSync } from 'node:fs';

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

const integer = (name: string, min: number) => (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new CliArgumentError(`${name} expects an integer >= ${min}, got ${v}`);
  return n;
};

const program = new Command();
program
  .name('cca')
  .description('cuda-caching-allocator: a PyTorch-style CUDA caching allocator for Node.js, and its tools.\n' +
    'Snapshot commands read our files and PyTorch\'s (pickle or JSON); - reads one from standard input.')
  .version(packageVersion(), '-V, --version', 'print the version')
  .option('--max-bytes <n>', 'refuse snapshot files larger than this (default 2 GiB)', integer('--max-bytes', 1))
  // Usage errors carry a stable code like every other error (subcommands inherit this).
  .configureOutput({ outputError: (str, write) => write(`cca: ${str.replace(/^error: /, '').trimEnd()} (ERR_CCA_USAGE)\n`) });

let stdinTaken = false;

/** Reads a snapshot file under the global --max-bytes limit; `-` is standard input (once). */
const load = (file: string) => {
  const maxBytes = program.opts<{ maxBytes?: number }>().maxBytes;
  if (file !== '-') return loadSnapshot(file, { maxBytes });
  if (stdinTaken) program.error('- (standard input) can be read once: name the other snapshots by file', { code: 'ERR_CCA_USAGE' });
  stdinTaken = true;
  return parseSnapshot(readStandardInput(maxBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES, '--max-bytes'), '-');
};

program
  .command('demo')
  .description('run a small training loop and show allocated vs reserved memory (simulated GPU when none is present)')
  .option('-n, --iterations <n>', 'training iterations', integer('--iterations', 1), 4)
  .action((opts: { iterations: number }) => runDemo({ iterations: Math.min(opts.iterations, 1000) }));

program
  .command('summary')
  .argument('<files...>', 'snapshots (.pickle or .json); several (one per rank or process) print one table')
  .description('what the numbers mean: reserved vs allocated vs cached, fragmentation, history; a row per file for several')
  .option('--json', 'print the summary as JSON (for several files: [{ file, devices }])')
  .action((files: string[], opts: { json?: boolean }) => {
    if (files.length === 1) {
      const snap = load(files[0]!);
      const s = summarize(snap);
      process.stdout.write(opts.json ? `${JSON.stringify(s, null, 2)}\n` : renderSnapshotSummary(files[0]!, s, snap));
      return;
    }
    const rows = files.map((path) => ({ path, devices: summarize(load(path)) }));
    process.stdout.write(opts.json ? json(rows.map((r) => ({ file: r.path, devices: r.devices })))
      : renderSummaryTable(rows));
  });

program
  .command('segments')
  .argument('<file>', 'a snapshot')
  .description('one line per segment: address, type, stream, pool, sizes, blocks')
  .action((file: string) => {
    process.stdout.write(renderSegments(load(file)));
  });

program
  .command('trace')
  .argument('<file>', 'a snapshot')
  .description('the recorded history, one line per event, with the top stack frame')
  .option('-d, --device <n>', 'device', integer('--device', 0), 0)
  .option('-n, --limit <n>', 'entries to show', integer('--limit', 1), 100)
  .option('-s, --skip <n>', 'entries to skip', integer('--skip', 0), 0)
  .option('--host', 'the pinned host memory\'s history (record_pinned_host_memory) instead of a device\'s')
  .action((file: string, opts: { device: number; limit: number; skip: number; host?: boolean }) => {
    process.stdout.write(renderTrace(load(file), opts));
  });

const json = (v: unknown): string => `${JSON.stringify(v, (_k, x) => (x === Infinity ? null : x), 2)}\n`;

program
  .command('frag')
  .argument('<file>', 'a snapshot')
  .description('fragmentation: largest free block, external fragmentation, what empty_cache() would return, per segment')
  .option('-t, --top <n>', 'segments to show', integer('--top', 1), 10)
  .option('--json', 'print the report as JSON')
  .action((file: string, opts: { top: number; json?: boolean }) => {
    const reports = fragmentation(load(file));
    process.stdout.write(opts.json ? json(reports) : renderFragmentation(reports, opts.top));
  });

program
  .command('diff')
  .argument('<a>', 'the earlier snapshot')
  .argument('<b>', 'the later snapshot')
  .description('what changed from A to B: live memory per allocation stack and per tag, bytes per annotated region')
  .option('-d, --device <n>', 'only this device', integer('--device', 0))
  .option('--depth <n>', 'stack frames per group', integer('--depth', 1), 3)
  .option('-t, --top <n>', 'rows per table', integer('--top', 1), 20)
  .option('--json', 'print the diff as JSON')
  .action((a: string, b: string, opts: { device?: number; depth: number; top: number; json?: boolean }) => {
    const d = diffSnapshots(load(a), load(b), { depth: opts.depth, device: opts.device });
    process.stdout.write(opts.json ? json(d) : renderDiff(a, b, d, opts.top));
  });

program
  .command('leaks')
  .argument('<file>', 'a snapshot with history')
  .description('allocations that outlive the step that made them, grouped by stack (steps: an annotation\'s START markers)')
  .option('-d, --device <n>', 'device', integer('--device', 0), 0)
  .option('-m, --marker <name>', 'the annotation that marks steps (default: the most frequent one)')
  .option('--min-steps <n>', 'step markers an allocation must outlive', integer('--min-steps', 1), 2)
  .option('--depth <n>', 'stack frames per group', integer('--depth', 1), 3)
  .option('-t, --top <n>', 'stacks to show', integer('--top', 1), 10)
  .option('--host', 'pinned host memory (record_pinned_host_memory), its steps marked by --device\'s annotations')
  .option('--json', 'print the report as JSON')
  .action((file: string, opts: { device: number; marker?: string; minSteps: number; depth: number; top: number; host?: boolean; json?: boolean }) => {
    const r = findLeaks(load(file), { device: opts.device, marker: opts.marker, minSteps: opts.minSteps, depth: opts.depth, host: opts.host === true });
    process.stdout.write(opts.json ? json(r) : renderLeaks(r, opts.top, opts.minSteps));
  });

program
  .command('replay')
  .argument('<file>', 'a snapshot with history')
  .description('run the recorded history through our allocator on a simulated device; compare reserved memory and segment events')
  .option('-d, --device <n>', 'the recorded device to replay', integer('--device', 0), 0)
  .option('--capacity-mb <n>', 'simulated device memory in MiB (default 256 GiB: only the policy limits growth)', integer('--capacity-mb', 1))
  .option('--settings <conf>', 'allocator settings, PYTORCH_CUDA_ALLOC_CONF syntax (default: the snapshot\'s); with --what-if, tried besides the standard set')
  .option('--what-if', 'replay under the recorded settings and the usual remedies, in parallel, and tabulate peak, fragmentation and OOMs')
  .addOption(new Option('--engine <name>', 'the allocator that replays: the native addon, or its WebAssembly build (default: native where the addon loads, else wasm; the reports are equal)')
    .choices(ENGINE_NAMES as string[]))
  .option('--json', 'print the report as JSON')
  .action(async (file: string, opts: { device: number; capacityMb?: number; settings?: string; whatIf?: boolean; json?: boolean; engine?: EngineName }) => {
    const engine = replayEngine(opts.engine).name;
    if (opts.whatIf) {
      const report = await whatIf(file, {
        maxBytes: program.opts<{ maxBytes?: number }>().maxBytes,
        device: opts.device,
        capacityBytes: opts.capacityMb === undefined ? undefined : opts.capacityMb * 2 ** 20,
        settings: opts.settings === undefined ? [] : [opts.settings],
        engine,
      });
      process.stdout.write(opts.json ? json(report) : renderWhatIf(file, report));
      return;
    }
    const snap = load(file);
    const entries = snap.device_traces[opts.device]?.length ?? 0;
    const bar = process.stderr.isTTY && entries >= 50_000
      ? new cliProgress.SingleBar({ format: 'replaying [{bar}] {value}/{total} entries', stream: process.stderr }, cliProgress.Presets.shades_classic)
      : undefined;
    bar?.start(entries, 0);
    let r;
    try {
      r = replayOnSim(snap, {
        device: opts.device,
        capacityBytes: opts.capacityMb === undefined ? undefined : opts.capacityMb * 2 ** 20,
        settings: opts.settings,
        onProgress: bar ? (done) => bar.update(done) : undefined,
        engine,
      });
    } finally {
      bar?.stop();
    }
    process.stdout.write(opts.json ? json(r) : renderReplay(file, r, engine));
  });

program
  .command('viz')
  .argument('<file>', 'a snapshot')
  .description('write the offline viewer: one HTML file (no network) with the memory timeline, the state at any event, stacks and search')
  .option('-o, --output <file>', 'the HTML file to write (default: FILE.html beside the snapshot)')
  .option('--what-if <conf>', 'open with the history replayed under these allocator settings (PYTORCH_CUDA_ALLOC_CONF syntax) in the what-if panel')
  .action((file: string, opts: { output?: string; whatIf?: string }) => {
    const output = opts.output ?? `${file}.html`;
    const html = viewerHtml(load(file), basename(file), opts.whatIf ?? null);
    const bytes = replaceFile(output, (out) => out.write(Buffer.from(html, 'utf8')));
    process.stderr.write(`wrote ${output} (${humanBytes(bytes)}); open it in a browser\n`);
  });

program
  .command('convert')
  .argument('<from>', 'a snapshot (.pickle or .json)')
  .argument('<to>', 'the file to write: .json for JSON, anything else for a pickle memory_viz opens')
  .description('convert between pickle and JSON')
  .action((from: string, to: string) => {
    const snap = load(from);
    const format = formatFor(to);
    if (format === 'pickle') internFrames(snap);
    const r = writeSnapshotFile(snap, to, format);
    process.stderr.write(`wrote ${r.path} (${r.format}, ${r.bytes} bytes)\n`);
  });

program.parseAsync(process.argv).catch((err: Error & { code?: string }) => {
  process.stderr.write(`cca: ${err.message}${err.code ? ` (${err.code})` : ''}\n`);
  process.exitCode = 1;
});
