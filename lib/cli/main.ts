#!/usr/bin/env node
// The `cca` command line.
import { Command } from 'commander';
import { runDemo } from '../demo.js';

const program = new Command();
program
  .name('cca')
  .description('cuda-caching-allocator: a PyTorch-style CUDA caching allocator for Node.js, and its tools');

program
  .command('demo')
  .description('run a small training loop and show allocated vs reserved memory (simulated GPU when none is present)')
  .option('-n, --iterations <n>', 'training iterations', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error(`--iterations expects an integer from 1 to 1000, got ${v}`);
    return n;
  }, 4)
  .action((opts: { iterations: number }) => runDemo({ iterations: opts.iterations }));

program.parseAsync(process.argv).catch((err: Error & { code?: string }) => {
  process.stderr.write(`cca: ${err.message}${err.code ? ` (${err.code})` : ''}\n`);
  process.exitCode = 1;
});
