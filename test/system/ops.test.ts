// What a platform engineer loads as it is (ops/): the Prometheus rules, unit-tested with
// promtool, written only in metric names our exporter has; the Grafana dashboard, checked
// against Grafana's published schema (@grafana/schema's types, by the TypeScript compiler);
// and both run against a real Prometheus scraping two exporting processes: every rule loads
// and evaluates, the recording rules record, an OOM alert fires, and every panel's query
// returns series.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { METRICS } from '../../lib/monitoring/metrics.js';
import { interop } from '../../lib/index.js';
import { buildConsumer } from '../interop/build-consumer.mjs';
import { tempDir } from '../support/temp-dir.js';
import { HAVE_PROMETHEUS, PROMETHEUS, startPrometheus } from '../support/prometheus.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RULES = join(ROOT, 'ops', 'prometheus', 'cca-rules.yml');
const RULE_TESTS = join(ROOT, 'ops', 'prometheus', 'cca-rules.test.yml');
const DASHBOARD = join(ROOT, 'ops', 'grafana', 'cca-dashboard.json');
const ENTRY = new URL('../../dist/index.js', import.meta.url).href;
const PROMTOOL = process.env.CCA_PROMTOOL ?? 'promtool';
const HAVE_PROMTOOL = spawnSync(PROMTOOL, ['--version']).status === 0;
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

interface Dashboard {
  templating: { list: { name: string; type: string; query: unknown }[] };
  panels: { title: string; targets: { expr: string }[] }[];
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const rulesText = readFileSync(RULES, 'utf8');
/** Every rule's expression and the recording rules' names, read from the YAML as written. */
const recorded = [...rulesText.matchAll(/^\s+- record: (\S+)$/gm)].map((m) => m[1]!);
const alerts = [...rulesText.matchAll(/^\s+- alert: (\S+)$/gm)].map((m) => m[1]!);
const panelQueries = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));

describe('the rules and the dashboard name only metrics we export', () => {
  const ours = new Set(METRICS.map((m) => m.name));
  /** The cca_ names a text uses that are neither exported nor recorded by the rules. */
  const unknown = (text: string): string[] => {
    const used = new Set([...text.matchAll(/\bcca_[a-z_]+/g)].map((m) => m[0]));
    expect(used.size).toBeGreaterThan(10);
    return [...used].filter((name) => !ours.has(name) && !recorded.some((r) => r.endsWith(`:${name}`) || r.includes(`:${name}:`)));
  };
  it.each([['the rules', rulesText], ['the dashboard', readFileSync(DASHBOARD, 'utf8')]])('%s', (_what, text) => {
    expect(unknown(text)).toEqual([]);
    // A metric renamed in METRICS leaves its old name in the text: the same check names it.
    expect(unknown(text.replaceAll('cca_reserved_bytes', 'cca_reserved_memory_bytes'))).toContain('cca_reserved_memory_bytes');
  });

  it('every alert is documented in docs/monitoring.md', () => {
    const docs = readFileSync(join(ROOT, 'docs', 'monitoring.md'), 'utf8');
    expect(alerts.length).toBeGreaterThanOrEqual(8);
    for (const a of alerts) expect(docs, a).toContain(`\`${a}\``);
  });
});

describe.skipIf(!HAVE_PROMTOOL)(HAVE_PROMTOOL ? 'promtool' : `promtool: skipped, no ${PROMTOOL} (apt-get install prometheus)`, () => {
  it('checks the rules file and runs its unit tests: every alert fires when it should and stays quiet otherwise', () => {
    expect(execFileSync(PROMTOOL, ['check', 'rules', RULES], { encoding: 'utf8' })).toMatch(/SUCCESS: \d+ rules found/);
    expect(execFileSync(PROMTOOL, ['test', 'rules', RULE_TESTS], { encoding: 'utf8' })).toMatch(/SUCCESS/);
    const tested = new Set([...readFileSync(RULE_TESTS, 'utf8').matchAll(/alertname: (\S+)/g)].map((m) => m[1]!));
    expect([...tested].sort()).toEqual([...alerts].sort());
  });
});

describe('the dashboard against Grafana\'s schema', () => {
  it('type-checks as @grafana/schema\'s Dashboard (every field known, every value of its type)', () => {
    const dir = tempDir('cca-grafana-');
    writeFileSync(join(dir, 'check.ts'), `import type { Dashboard } from '@grafana/schema';\n` +
      `export const dashboard: Dashboard = ${readFileSync(DASHBOARD, 'utf8')};\n`);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: true,
        baseUrl: '.', paths: { '@grafana/schema': [join(ROOT, 'node_modules', '@grafana', 'schema')] }, types: [] },
      files: ['check.ts'],
    }));
    const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
    // A field Grafana does not know fails the same check.
    writeFileSync(join(dir, 'check.ts'), `import type { Dashboard } from '@grafana/schema';\n` +
      `export const dashboard: Dashboard = { schemaVersion: 41, panelz: [] };\n`);
    expect(spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' }).status).not.toBe(0);
  });

  it('has a variable per job, instance and device, and the panels the docs describe', () => {
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'job', 'instance', 'device']);
    const docs = readFileSync(join(ROOT, 'docs', 'monitoring.md'), 'utf8');
    for (const p of dashboard.panels) expect(docs, p.title).toContain(`**${p.title}**`);
  });
});

/** An exporting process: memory kept, history recording into a small ring (full), a label, a
 *  native client holding memory through the C ABI; a line on its stdin makes it run out of
 *  memory (once Prometheus has seen its counter at 0, so the rise is an increase). */
function exporter(i: number, consumer: string): Promise<{ port: number; child: ChildProcess }> {
  const code = `
    import { createRequire } from 'node:module';
    import { cuda, memory, monitoring, interop } from ${JSON.stringify(ENTRY)};
    cuda.sim.configure({ capacityBytes: 1024 * 2 ** 20 });
    memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 50 });
    globalThis.keep = [cuda.alloc(${i + 1} * 24 * 2 ** 20, { tag: 'weights' })];
    for (let k = 0; k < 40; k++) cuda.alloc(2 ** 20).free();
    const c = createRequire(import.meta.url)(${JSON.stringify(consumer)});
    c.attach(interop.allocatorApi());
    const client = c.open('codec', 1).client;
    c.malloc(client, 0, 5n * 2n ** 20n, 0n);
    const server = await monitoring.serveMetrics({ port: 0 });
    console.log(JSON.stringify({ port: server.port }));
    process.stdin.once('data', () => { try { cuda.alloc(2 * 2 ** 30); } catch {} });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve({ port: (JSON.parse(out.split('\n')[0]!) as { port: number }).port, child });
    });
    child.once('exit', (c) => reject(new Error(`exporter ${i} exited with ${c}`)));
  });
}

async function api<T>(base: string, path: string): Promise<T> {
  const body = (await (await fetch(`${base}${path}`)).json()) as { status: string; data: T; error?: string };
  expect(body.status, `${path}: ${body.error}`).toBe('success');
  return body.data;
}

/** Polls `check` until it holds; the deadline only stops a Prometheus that never gets there. */
async function until(check: () => Promise<boolean>, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe.skipIf(!HAVE_PROMETHEUS)(HAVE_PROMETHEUS ? 'the rules and the dashboard on a real Prometheus scraping two processes'
  : `a real Prometheus: skipped, no ${PROMETHEUS} on PATH (apt-get install prometheus, or set CCA_PROMETHEUS)`, () => {
  it('loads and evaluates every rule, records, fires the OOM alert, and every panel\'s query returns series', async () => {
    const consumer = buildConsumer(interop.includeDir, tempDir('cca-ops-consumer-'));
    const exporters = await Promise.all([exporter(0, consumer), exporter(1, consumer)]);
    const ports = exporters.map((e) => e.port);
    const base = await startPrometheus(ports.map((p) => `127.0.0.1:${p}`), [RULES]);
    const deadline = Date.now() + 300_000;
    type Vector = { metric: Record<string, string>; value: [number, string] }[];
    const query = (q: string) => api<{ result: Vector }>(base, `/api/v1/query?query=${encodeURIComponent(q)}`).then((d) => d.result);

    // The OOM alert fires for the process that ran out of memory, and only for it.
    await until(async () => (await query('cca_ooms_total')).length === 2, deadline);
    await new Promise((r) => setTimeout(r, 2000));  // a few scrapes at 0
    exporters[0]!.child.stdin!.write('oom\n');
    await until(async () => (await api<{ alerts: { labels: Record<string, string>; state: string }[] }>(base, '/api/v1/alerts'))
      .alerts.some((a) => a.labels.alertname === 'CcaOutOfMemory' && a.state === 'firing'), deadline);
    const firing = (await api<{ alerts: { labels: Record<string, string>; state: string }[] }>(base, '/api/v1/alerts')).alerts
      .filter((a) => a.labels.alertname === 'CcaOutOfMemory');
    expect(firing.map((a) => [a.labels.instance, a.state])).toEqual([[`127.0.0.1:${ports[0]}`, 'firing']]);

    // Every rule loaded and evaluated without error; each recording rule has recorded.
    type Rules = { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    const rulesNow = async () => (await api<Rules>(base, '/api/v1/rules')).groups.flatMap((g) => g.rules);
    await until(async () => (await rulesNow()).every((r) => r.health !== 'unknown'), deadline);  // each evaluated once
    const rules = await rulesNow();
    expect(rules.map((r) => r.name).sort()).toEqual([...recorded, ...alerts].sort());
    for (const r of rules) expect(r.health, `${r.name}: ${r.lastError}`).toBe('ok');
    for (const name of recorded) {
      await until(async () => (await query(name)).length > 0, deadline);
      expect((await query(name)).length, name).toBeGreaterThan(0);
    }

    // Every panel's query, with the variables at "All", returns series.
    const substitute = (expr: string) => expr.replace(/\$job|\$instance|\$device/g, '.*').replace(/\$__rate_interval/g, '1m');
    for (const { panel, expr } of panelQueries) {
      await until(async () => (await query(substitute(expr))).length > 0, deadline);
      const series = await query(substitute(expr));
      expect(series.length, `${panel}: ${expr}`).toBeGreaterThan(0);
    }
    // The variables' queries list both processes.
    const instances = await api<string[]>(base, `/api/v1/label/instance/values?match[]=${encodeURIComponent('cca_reserved_bytes')}`);
    expect(instances.sort()).toEqual(ports.map((p) => `127.0.0.1:${p}`).sort());
  });
});
