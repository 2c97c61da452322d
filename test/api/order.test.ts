// Events that share a microsecond are still ordered: every trace entry and annotation of a
// device carries a seq from one counter, and diff and leaks bracket by it. The flaky
// failure this pins down: an allocation made just before annotate('forward') shared the
// START's time_us and was counted inside the region.
import { beforeEach, describe, expect, it } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { diffSnapshots, regionTotals } from '../../lib/analysis/diff.js';
import { findLeaks } from '../../lib/analysis/leaks.js';
import { isExactlyOrdered } from '../../lib/analysis/order.js';
import type { Annotation, Snapshot, TraceEntry } from '../../lib/snapshot/types.js';
import { encodeSnapshot } from '../../lib/snapshot/dump.js';
import { parseSnapshot } from '../../lib/snapshot/load.js';
import { KiB, freshSim } from '../support/helpers.js';

beforeEach(() => {
  freshSim();
  memory._record_memory_history(null);
});

// Every event at the same microsecond, as on a fast machine or a coarse clock.
const T = 1_700_000_000_000_000;
function entry(action: TraceEntry['action'], addr: number, size: number, seq?: number): TraceEntry {
  const e: TraceEntry = { action, addr, size, stream: 0, time_us: T, compile_context: 'N/A', user_metadata: '' };
  if (seq !== undefined) e.seq = seq;
  return e;
}
function note(name: string, stage: 'START' | 'END', seq?: number): Annotation {
  const a: Annotation = { device: 0, name, stage, time_us: T };
  if (seq !== undefined) a.seq = seq;
  return a;
}

/** Step i: a 64 KiB allocation just before the step starts, then 1 KiB inside it, freed inside. */
function tiedHistory(steps: number, withSeq: boolean): Snapshot {
  const trace: TraceEntry[] = [];
  const notes: Annotation[] = [];
  let seq = 0;
  const next = () => (withSeq ? ++seq : undefined);
  for (let i = 0; i < steps; i++) {
    trace.push(entry('alloc', 0x100000 + i * 0x10000, 64 * KiB, next()));  // before START, never freed
    notes.push(note('step', 'START', next()));
    trace.push(entry('alloc', 0x900000, KiB, next()));
    trace.push(entry('free_requested', 0x900000, KiB, next()));
    trace.push(entry('free_completed', 0x900000, KiB, next()));
    notes.push(note('step', 'END', next()));
  }
  return { segments: [], device_traces: [trace], external_annotations: notes };
}

describe('bracketing by seq when every time_us ties', () => {
  it('counts only what happened between START and END', () => {
    const s = tiedHistory(5, true);
    expect(isExactlyOrdered(s, 0)).toBe(true);
    expect(regionTotals(s).get('step')).toEqual({ runs: 5, allocated: 5 * KiB, freed: 5 * KiB });
  });

  it('puts an allocation made just before a step marker in the step before', () => {
    // Allocation i is made before step i starts: it belongs to step i (0-based count of
    // markers before it), so after 5 markers the first has outlived 5, the last 1.
    const r = findLeaks(tiedHistory(5, true), { marker: 'step', minSteps: 2 });
    expect(r.survivors.count).toBe(4);
    expect(r.groups[0]!.firstStep).toBe(0);
    expect(r.groups[0]!.lastStep).toBe(3);
  });

  it('keeps seq through pickle and JSON files', () => {
    const s = tiedHistory(3, true);
    for (const format of ['pickle', 'json'] as const) {
      const back = parseSnapshot(encodeSnapshot(s, format));
      expect(isExactlyOrdered(back, 0)).toBe(true);
      expect(regionTotals(back).get('step')).toEqual({ runs: 3, allocated: 3 * KiB, freed: 3 * KiB });
    }
  });

  it('falls back to time_us for files without seq (PyTorch\'s), where a tie counts as inside', () => {
    const s = tiedHistory(5, false);
    expect(isExactlyOrdered(s, 0)).toBe(false);
    // Without an order finer than the microsecond, the allocation before START ties with it.
    expect(regionTotals(s).get('step')!.allocated).toBe(5 * (64 * KiB + KiB));
  });
});

describe('recorded back to back', () => {
  it('orders each allocation against the markers around it, every time', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 100_000 });
    const kept: ReturnType<typeof cuda.alloc>[] = [];
    const runs = 300;
    for (let i = 0; i < runs; i++) {
      kept.push(cuda.alloc(64 * KiB));                    // just before START: outside
      memory.annotate('forward', () => cuda.alloc(KiB).free());
      kept.push(cuda.alloc(2 * KiB));                     // just after END: outside
    }
    const s = memory._snapshot();
    const trace = s.device_traces[0]!;
    const seqs = trace.map((e) => e.seq!);
    expect(seqs.every((q, i) => i === 0 || q > seqs[i - 1]!)).toBe(true);
    expect(isExactlyOrdered(s, 0)).toBe(true);
    // Microseconds tie when several events share one (how many do depends on the machine's
    // speed); seq never does. The same history with every time tied, as the coarsest clock
    // would stamp it, must read the same.
    const tied = {
      ...s,
      device_traces: [trace.map((e) => ({ ...e, time_us: 1 }))],
      external_annotations: s.external_annotations!.map((a) => ({ ...a, time_us: 1 })),
    };
    for (const snap of [s, tied]) {
      expect(isExactlyOrdered(snap, 0)).toBe(true);
      expect(regionTotals(snap).get('forward')).toEqual({ runs, allocated: runs * KiB, freed: runs * KiB });
      const d = diffSnapshots({ segments: [], device_traces: [[]] }, snap);
      expect(d.byRegion.find((r) => r.name === 'forward')!.b.allocated).toBe(runs * KiB);
    }
    for (const b of kept) b.free();
  });
});
