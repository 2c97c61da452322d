// The allocator's figures as Prometheus metrics (prom-client), OpenTelemetry instruments
// (the real SDK) and an HTTP endpoint: values equal memory_stats() and what the segments
// show, one native call per scrape, names by Prometheus's conventions.
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import client from 'prom-client';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { InvalidArgumentError, Stream, cuda, memory, monitoring, type Segment } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { KiB, MiB, freshSim } from '../support/helpers.js';

beforeEach(() => {
  freshSim({ devices: 2 });
  memory._record_memory_history(null);
});
afterEach(() => vi.restoreAllMocks());

/** A cache with live and free blocks in both pools, on two devices and two streams. */
function workload() {
  const side = Stream.create();
  const keep = [cuda.alloc(3 * MiB), cuda.alloc(1000), cuda.alloc(30 * MiB, { stream: side }), cuda.alloc(5000, { device: 1 })];
  for (const size of [4 * KiB, 100 * KiB, 5 * MiB, 12 * MiB]) cuda.alloc(size).free();
  cuda.alloc(64 * KiB, { stream: side }).free();
  return keep;
}

/** Parses the text format into name{labels} -> value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The largest inactive block and free bytes of a device's pool, from the segments. */
function fromSegments(segments: Segment[], device: number, pool: 'all' | 'small_pool' | 'large_pool') {
  const segs = segments.filter((s) => s.device === device && (pool === 'all' || s.segment_type === pool.replace('_pool', '')));
  const free = segs.flatMap((s) => s.blocks).filter((b) => b.state === 'inactive');
  const total = free.reduce((n, b) => n + b.size, 0);
  const largest = free.reduce((n, b) => Math.max(n, b.size), 0);
  return { largest, fragmentation: total > 0 ? 1 - largest / total : 0 };
}

describe('Prometheus (prom-client)', () => {
  it('reports memory_stats() per device and pool, and fragmentation as the segments show it', async () => {
    const keep = workload();
    const registry = new client.Registry();
    await monitoring.registerPrometheus({ registry });
    const m = parse(await registry.metrics());
    const segments = memory.memory_snapshot();
    for (const device of [0, 1]) {
      const stats = memory.memory_stats(device);
      for (const pool of ['all', 'small_pool', 'large_pool'] as const) {
        const l = `{device="${device}",pool="${pool}"}`;
        expect(m.get(`cca_allocated_bytes${l}`)).toBe(stats[`allocated_bytes.${pool}.current`]);
        expect(m.get(`cca_reserved_peak_bytes${l}`)).toBe(stats[`reserved_bytes.${pool}.peak`]);
        expect(m.get(`cca_requested_bytes${l}`)).toBe(stats[`requested_bytes.${pool}.current`]);
        expect(m.get(`cca_inactive_split_bytes${l}`)).toBe(stats[`inactive_split_bytes.${pool}.current`]);
        expect(m.get(`cca_segments${l}`)).toBe(stats[`segment.${pool}.current`]);
        expect(m.get(`cca_allocations_total${l}`)).toBe(stats[`allocation.${pool}.allocated`]);
        const seg = fromSegments(segments, device, pool);
        expect(m.get(`cca_largest_free_block_bytes${l}`)).toBe(seg.largest);
        expect(m.get(`cca_external_fragmentation_ratio${l}`)).toBeCloseTo(seg.fragmentation, 12);
      }
      expect(m.get(`cca_device_mallocs_total{device="${device}"}`)).toBe(stats.num_device_alloc);
      expect(m.get(`cca_ooms_total{device="${device}"}`)).toBe(0);
    }
    expect(m.get('cca_external_fragmentation_ratio{device="0",pool="all"}')).toBeGreaterThan(0);
    for (const b of keep) b.free();
  });

  it('reads the allocator once per scrape, whatever the number of families and devices', async () => {
    workload();
    const registry = new client.Registry();
    await monitoring.registerPrometheus({ registry });
    const spy = vi.spyOn(native, 'monitorSample');
    await registry.metrics();
    expect(spy).toHaveBeenCalledTimes(1);
    // The next scrape reads afresh, even in the same turn of the event loop.
    const before = memory.memory_reserved(0);
    const more = cuda.alloc(40 * MiB);
    const m = parse(await registry.metrics());
    expect(spy).toHaveBeenCalledTimes(2);
    expect(m.get('cca_reserved_bytes{device="0",pool="all"}')).toBe(before + 40 * MiB);
    more.free();
  });

  it('follows Prometheus naming, shows history only while recording, and unregisters', async () => {
    const registry = new client.Registry();
    const handle = await monitoring.registerPrometheus({ registry });
    const families = (await registry.getMetricsAsJSON()) as unknown as { name: string; type: string }[];
    for (const f of families) {
      expect(f.name).toMatch(/^cca_[a-z_]+$/);
      if (f.type === 'counter') expect(f.name).toMatch(/_total$/);
      else expect(f.name).toMatch(/_(bytes|ratio|entries)$|^cca_(allocations|segments|client_allocations|tag_allocations)$/);
    }
    expect(parse(await registry.metrics()).has('cca_history_entries{device="0"}')).toBe(false);
    memory._record_memory_history({ enabled: 'all', maxEntries: 1000 });
    cuda.alloc(4096).free();
    await new Promise((r) => setImmediate(r));
    const m = parse(await registry.metrics());
    expect(m.get('cca_history_capacity_entries{device="0"}')).toBe(1000);
    expect(m.get('cca_history_entries{device="0"}')).toBeGreaterThanOrEqual(2);
    await expect(monitoring.registerPrometheus({ registry })).rejects.toMatchObject({ code: 'ERR_CCA_ALREADY_REGISTERED' });
    handle.unregister();
    expect(await registry.metrics()).toBe('\n');
  });

  it('uses prom-client\'s default registry when given none', async () => {
    const handle = await monitoring.registerPrometheus();
    try {
      expect(handle.registry).toBe(client.register);
      expect(parse(await client.register.metrics()).get('cca_reserved_bytes{device="1",pool="all"}')).toBe(0);
    } finally {
      handle.unregister();
    }
    expect(client.register.getSingleMetric('cca_reserved_bytes')).toBeUndefined();
  });

  it('exports live memory per label, the TAG_SERIES largest and the rest as tag="other"', async () => {
    const registry = new client.Registry();
    const handle = await monitoring.registerPrometheus({ registry });
    const keep = Array.from({ length: monitoring.TAG_SERIES + 3 }, (_, i) => cuda.alloc((i + 1) * 4096, { tag: `request-${i}` }));
    keep.push(cuda.alloc(4096, { tag: 'other' }), cuda.alloc(4096));  // a label named "other"; one with none
    cuda.alloc(8192, { tag: 'freed' }).free();
    const m = parse(await registry.metrics());
    const series = [...m.keys()].filter((k) => k.startsWith('cca_tag_allocated_bytes{'));
    expect(series).toHaveLength(monitoring.TAG_SERIES + 1);
    const byTag = memory.memory_stats_by_tag(0);
    for (let i = 3; i < monitoring.TAG_SERIES + 3; i++) {
      expect(m.get(`cca_tag_allocated_bytes{device="0",tag="request-${i}"}`)).toBe(byTag[`request-${i}`]!.allocated_bytes.current);
    }
    // The three smallest and the label called "other" share the "other" series.
    expect(m.get('cca_tag_allocated_bytes{device="0",tag="other"}')).toBe(4096 + 8192 + 12288 + 4096);
    expect(m.get('cca_tag_allocations{device="0",tag="other"}')).toBe(4);
    expect(m.has('cca_tag_allocated_bytes{device="0",tag="freed"}')).toBe(false);
    handle.unregister();
    for (const b of keep) b.free();
  });

  it('refuses a registry that is not one', async () => {
    await expect(monitoring.registerPrometheus({ registry: {} as never })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(monitoring.registerPrometheus({ registy: 1 } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
  });
});

class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

describe('OpenTelemetry (the SDK\'s MeterProvider)', () => {
  it('observes the same figures through one batch callback', async () => {
    const keep = workload();
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const spy = vi.spyOn(native, 'monitorSample');
    const handle = monitoring.registerOpenTelemetry(provider.getMeter('gpu'));
    const { resourceMetrics } = await reader.collect();
    expect(spy).toHaveBeenCalledTimes(1);
    const points = new Map<string, number>();
    for (const scope of (resourceMetrics as ResourceMetrics).scopeMetrics) {
      for (const metric of scope.metrics) {
        for (const p of metric.dataPoints) {
          const a = p.attributes as Record<string, string>;
          points.set(`${metric.descriptor.name}|${metric.descriptor.unit}|${a.device}|${a.pool ?? ''}`, p.value as number);
        }
      }
    }
    const stats = memory.memory_stats(0);
    expect(points.get('cca.reserved|By|0|large_pool')).toBe(stats['reserved_bytes.large_pool.current']);
    expect(points.get('cca.allocated.peak|By|0|all')).toBe(stats['allocated_bytes.all.peak']);
    expect(points.get('cca.device_mallocs|{count}|0|')).toBe(stats.num_device_alloc);
    expect(points.get('cca.external_fragmentation|1|0|all')).toBeCloseTo(fromSegments(memory.memory_snapshot(), 0, 'all').fragmentation, 12);
    handle.unregister();
    await reader.collect();
    expect(spy).toHaveBeenCalledTimes(1);  // the callback is gone
    await provider.shutdown();
    for (const b of keep) b.free();
  });

  it('refuses something that is not a meter', () => {
    expect(() => monitoring.registerOpenTelemetry({} as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });
});

describe('the endpoint', () => {
  it('serves the metrics on localhost at the path, and nothing else', async () => {
    const keep = workload();
    const server = await monitoring.serveMetrics({ port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await fetch(server.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const m = parse(await res.text());
      expect(m.get('cca_reserved_bytes{device="1",pool="all"}')).toBe(memory.memory_reserved(1));
      expect((await fetch(server.url.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await server.close();
    }
    await expect(monitoring.serveMetrics({ port: 70000 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    const first = await monitoring.serveMetrics({ port: 0 });
    await expect(monitoring.serveMetrics({ port: first.port })).rejects.toMatchObject({
      code: 'ERR_CCA_PORT_IN_USE', message: expect.stringMatching(/already in use; pass another port, or port: 0/),
    });
    await first.close();
    for (const b of keep) b.free();
  });
});

describe('docs/monitoring.md', () => {
  it('lists exactly the metrics exported, with their types and the stat each mirrors', () => {
    const doc = readFileSync(new URL('../../docs/monitoring.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `(cca_[a-z_]+)` \| (gauge|counter) \| [^|]+ \| `([^`]+)` \|/gm)].map((m) => [m[1], m[2], m[3]]);
    expect(rows).toEqual(monitoring.METRICS.map((m) => [m.name, m.kind, m.mirrors]));
  });
});

// The per-device record monitorSample writes is described twice, in
// native/binding/memory_functions.cpp (kMonitorExtras) and lib/monitoring/metrics.ts
// (MONITOR_EXTRAS): this holds the two together.
describe('monitorSample records', () => {
  it('hold the stats and MONITOR_EXTRAS figures per device, as readSamples decodes them', async () => {
    const { MONITOR_EXTRAS } = await import('../../lib/monitoring/metrics.js');
    freshSim({ devices: 2 });
    const sample = native.monitorSample(undefined);
    expect(sample.length).toBe(2 * (native.statKeys().length + MONITOR_EXTRAS));
  });

  it('carry what the device reports and the memory fraction\'s share of it', async () => {
    const { readSamples } = await import('../../lib/monitoring/metrics.js');
    freshSim({ devices: 2, capacityBytes: 256 * MiB });
    memory.set_per_process_memory_fraction(0.25, 1);
    const b = cuda.alloc(5 * MiB, { device: 1 });
    try {
      const [d0, d1] = readSamples();
      expect([d0!.deviceTotal, d0!.memoryLimit]).toEqual([256 * MiB, 256 * MiB]);
      expect([d1!.deviceTotal, d1!.memoryLimit]).toEqual([256 * MiB, 64 * MiB]);
      expect(d1!.deviceFree).toBe(256 * MiB - memory.memory_reserved(1));
      expect(d0!.deviceFree).toBe(256 * MiB);
    } finally {
      b.free();
      memory.set_per_process_memory_fraction(1, 1);
    }
  });
});
