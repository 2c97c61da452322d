// Many processes, one Prometheus: four Node processes each export their own simulated
// device with monitoring.serveMetrics(), a real Prometheus (Debian's package) scrapes them
// with the scrape config of docs/monitoring.md, and its HTTP API must return every
// process's series with the values the processes report, and answer the docs' queries.
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { HAVE_PROMETHEUS as HAVE, PROMETHEUS, startPrometheus } from '../support/prometheus.js';

const ENTRY = new URL('../../dist/index.js', import.meta.url).href;
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

interface Reported {
  port: number;
  reserved: number;
  allocated: number;
}

/** Process i keeps (i+1) x 24 MiB and 1000 bytes live, and serves its metrics. */
function exporter(i: number): Promise<Reported> {
  const code = `
    import { cuda, memory, monitoring } from ${JSON.stringify(ENTRY)};
    cuda.sim.configure({ capacityBytes: 4 * 2 ** 30 });
    globalThis.keep = [cuda.alloc(${i + 1} * 24 * 2 ** 20), cuda.alloc(1000)];
    cuda.alloc(8 * 2 ** 20).free();
    const server = await monitoring.serveMetrics({ port: 0 });
    console.log(JSON.stringify({ port: server.port, reserved: memory.memory_reserved(), allocated: memory.memory_allocated() }));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!) as Reported);
    });
    child.once('exit', (c) => reject(new Error(`exporter ${i} exited with ${c}`)));
  });
}

/** Polls until the query returns `n` series (a scrape lands target by target). */
async function queryUntil(base: string, promql: string, n: number, deadline: number) {
  let result: Awaited<ReturnType<typeof query>> = [];
  while (Date.now() < deadline) {
    try {
      result = await query(base, promql);
      if (result.length === n) return result;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return result;
}

async function query(base: string, promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  expect(body.status).toBe('success');
  return body.data.result;
}

describe.skipIf(!HAVE)(HAVE ? 'a real Prometheus scraping four processes'
  : `a real Prometheus: skipped, no ${PROMETHEUS} on PATH (apt-get install prometheus, or set CCA_PROMETHEUS)`, () => {
  it('has every process\'s series, with the values each reported', async () => {
    const reported = await Promise.all([0, 1, 2, 3].map(exporter));
    // The scrape config of docs/monitoring.md, with these processes as targets.
    const base = await startPrometheus(reported.map((r) => `127.0.0.1:${r.port}`));
    // Each query below waits for its count of series, not for a time; the deadline only
    // stops a Prometheus that never scrapes (the test then fails on the count).
    const deadline = Date.now() + 300_000;
    const series = await queryUntil(base, 'cca_reserved_bytes{pool="all"}', 4, deadline);
    expect(series).toHaveLength(4);
    const byInstance = new Map(reported.map((r) => [`127.0.0.1:${r.port}`, r]));
    for (const s of series) {
      const r = byInstance.get(s.metric.instance!)!;
      expect(s.metric).toMatchObject({ job: 'gpu-memory', device: '0', pool: 'all' });
      expect(Number(s.value[1])).toBe(r.reserved);
    }
    // The docs' query: reserved but not allocated, per process and device.
    const cached = await queryUntil(base, 'cca_reserved_bytes{pool="all"} - on(instance, device, pool) cca_allocated_bytes{pool="all"}', 4, deadline);
    expect(cached).toHaveLength(4);
    for (const s of cached) {
      const r = byInstance.get(s.metric.instance!)!;
      expect(Number(s.value[1])).toBe(r.reserved - r.allocated);
    }
    await queryUntil(base, 'cca_allocated_bytes{pool="all"}', 4, deadline);
    const total = await query(base, 'sum(cca_allocated_bytes{pool="all"})');
    expect(Number(total[0]!.value[1])).toBe(reported.reduce((n, r) => n + r.allocated, 0));
    const ooms = await queryUntil(base, 'sum by (instance) (increase(cca_ooms_total[1h]))', 4, deadline);
    expect(ooms).toHaveLength(4);
  });
});
