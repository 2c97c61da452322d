// The public surface's types, checked by `tsc -p tsconfig.test.json` (part of npm test)
// and asserted here with expectTypeOf.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  CorruptSnapshotError,
  CudaOutOfMemoryError,
  DeviceBuffer,
  SnapshotFileError,
  type LoadOptions,
  MemPool,
  Stream,
  analysis,
  replay,
  cuda,
  loadSnapshot,
  memory,
  monitoring,
  use_mem_pool,
  type Segment,
  type Snapshot,
  type TraceEntry,
} from '../../lib/index.js';

describe('public types', () => {
  it('analysis', () => {
    expectTypeOf(analysis.fragmentation).returns.toEqualTypeOf<analysis.FragmentationReport[]>();
    expectTypeOf(analysis.diffSnapshots).parameters.toEqualTypeOf<[Snapshot, Snapshot, analysis.DiffOptions?]>();
    expectTypeOf(analysis.findLeaks).returns.toEqualTypeOf<analysis.LeakReport>();
    expectTypeOf<analysis.LeakGroup['growing']>().toEqualTypeOf<boolean>();
    expectTypeOf(replay.replayOnSim).returns.toEqualTypeOf<replay.ReplayReport>();
    expectTypeOf<replay.ReplayReport['oom']>().toEqualTypeOf<{ index: number; size: number; message: string } | null>();
    expectTypeOf(replay.whatIf).returns.resolves.toEqualTypeOf<replay.WhatIfReport>();
    expectTypeOf<replay.WhatIfRow['ooms']>().toEqualTypeOf<{ recorded: number; here: number }>();
  });

  it('analysis keeps replay\'s old names, the same functions and types (deprecated through 0.2.x)', () => {
    expectTypeOf(analysis.replayOnSim).toEqualTypeOf(replay.replayOnSim);
    expectTypeOf(analysis.whatIf).toEqualTypeOf(replay.whatIf);
    expectTypeOf<analysis.ReplayReport>().toEqualTypeOf<replay.ReplayReport>();
    expectTypeOf<analysis.WhatIfReport>().toEqualTypeOf<replay.WhatIfReport>();
    const aliases = ['replayOnSim', 'settingsOf', 'whatIf', 'WHAT_IF_SETTINGS'] as const;
    for (const name of aliases) expect(analysis[name]).toBe(replay[name]);
    // Nothing else of replay's is reachable through analysis.
    expect(Object.keys(analysis).filter((k) => k in replay).sort()).toEqual([...aliases].sort());
  });

  it('monitoring', () => {
    expectTypeOf(monitoring.registerPrometheus).returns.resolves.toEqualTypeOf<monitoring.PrometheusHandle>();
    expectTypeOf(monitoring.serveMetrics).returns.resolves.toEqualTypeOf<monitoring.MetricsServer>();
    expectTypeOf(monitoring.registerOpenTelemetry).returns.toEqualTypeOf<monitoring.OpenTelemetryHandle>();
    expectTypeOf<monitoring.MetricDefinition['kind']>().toEqualTypeOf<'gauge' | 'counter'>();
  });

  it('files and ordering', () => {
    expectTypeOf(loadSnapshot).parameters.toEqualTypeOf<[string, LoadOptions?]>();
    expectTypeOf<TraceEntry['seq']>().toEqualTypeOf<number | undefined>();
    expectTypeOf(analysis.orderKeyOf).returns.toEqualTypeOf<analysis.OrderKey>();
    expectTypeOf<SnapshotFileError['code']>().toEqualTypeOf<string>();
    expectTypeOf<CorruptSnapshotError['path']>().toEqualTypeOf<string | undefined>();
  });

  it('cuda', () => {
    expectTypeOf(cuda.alloc).parameters.toEqualTypeOf<[number, cuda.AllocOptions?]>();
    expectTypeOf(cuda.alloc).returns.toEqualTypeOf<DeviceBuffer>();
    expectTypeOf<DeviceBuffer['ptr']>().toEqualTypeOf<number>();
    expectTypeOf<DeviceBuffer['stream']>().toEqualTypeOf<Stream>();
    expectTypeOf(cuda.recordStream).parameters.toEqualTypeOf<[DeviceBuffer, Stream]>();
    expectTypeOf(cuda.isAvailable).returns.toEqualTypeOf<boolean>();
    expectTypeOf<DeviceBuffer['copyTo']>().returns.toEqualTypeOf<ArrayBufferView>();
  });

  it('memory', () => {
    expectTypeOf(memory.memory_stats).returns.toEqualTypeOf<Record<string, number>>();
    expectTypeOf(memory.memory_allocated).parameters.toEqualTypeOf<[number?]>();
    expectTypeOf(memory.memory_snapshot).returns.toEqualTypeOf<Segment[]>();
    expectTypeOf(memory._snapshot).returns.toEqualTypeOf<Snapshot>();
    expectTypeOf(memory._dump_snapshot).returns.resolves.toHaveProperty('bytes');
    expectTypeOf(memory.mem_get_info).returns.toEqualTypeOf<[number, number]>();
    expectTypeOf<TraceEntry['action']>().toEqualTypeOf<
      'alloc' | 'free_requested' | 'free_completed' | 'segment_alloc' | 'segment_free' | 'segment_map' | 'segment_unmap' | 'snapshot' | 'oom'
      | 'annotate'
    >();
    expectTypeOf(memory._allocation_traceback).returns.toEqualTypeOf<{ filename: string; line: number; name: string; column: number }[] | null>();
    expectTypeOf(memory._annotate_memory).parameters.toEqualTypeOf<[DeviceBuffer | number, string, (number | undefined)?]>();
    expectTypeOf(memory.withMemoryMetadata<number>).returns.toEqualTypeOf<number>();
    expectTypeOf(memory.caching_allocator_disabled<string>).returns.toEqualTypeOf<string>();
    expectTypeOf(loadSnapshot).returns.toEqualTypeOf<Snapshot>();
  });

  it('MemPool and errors', () => {
    expectTypeOf<MemPool['id']>().toEqualTypeOf<number[]>();
    expectTypeOf(use_mem_pool<number>).returns.toEqualTypeOf<number>();
    expectTypeOf<CudaOutOfMemoryError['code']>().toEqualTypeOf<string>();
    expectTypeOf<CudaOutOfMemoryError['deviceFree']>().toEqualTypeOf<number>();
  });
});
