// A real Prometheus for the system tests (Debian's package): started on a free port with a
// scrape config for the given targets (one job, gpu-memory, scraping every second), and
// killed when the test file ends.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { tempDir } from './temp-dir.js';

export const PROMETHEUS = process.env.CCA_PROMETHEUS ?? 'prometheus';
export const HAVE_PROMETHEUS = spawnSync(PROMETHEUS, ['--version']).status === 0;

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) c.kill('SIGKILL');
});

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts Prometheus scraping `targets` (host:port); `rules`: rule files to load (evaluated
 *  every second). Returns its base URL. */
export async function startPrometheus(targets: string[], rules: string[] = []): Promise<string> {
  const dir = tempDir('cca-prometheus-');
  const port = await freePort();
  writeFileSync(join(dir, 'prometheus.yml'), [
    'global:', '  scrape_interval: 1s', '  evaluation_interval: 1s',
    ...(rules.length ? [`rule_files: [${rules.map((r) => `'${r}'`).join(', ')}]`] : []),
    'scrape_configs:', '  - job_name: gpu-memory', '    static_configs:',
    `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`, '',
  ].join('\n'));
  started.push(spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' }));
  return `http://127.0.0.1:${port}`;
}
