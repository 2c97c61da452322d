// Text renderings of the analyses (frag, diff, leaks) for the CLI.
import { humanBytes } from '../format.js';
import type { WhatIfReport } from '../replay/what-if.js';
import type { FragmentationReport } from '../analysis/fragmentation.js';
import type { GroupDelta, SnapshotDiff } from '../analysis/diff.js';
import type { LeakReport } from '../analysis/leaks.js';
import type { ReplayReport } from '../replay/report.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const signed = (n: number): string => (n > 0 ? `+${humanBytes(n)}` : n < 0 ? `-${humanBytes(-n)}` : '0');

export function renderFragmentation(reports: FragmentationReport[], top: number): string {
  const out: string[] = [];
  if (reports.length === 0) out.push('no segments: nothing is reserved');
  for (const r of reports) {
    out.push(`device ${r.device}: ${humanBytes(r.reserved)} reserved, ${humanBytes(r.allocated)} allocated, ` +
      `${humanBytes(r.free)} free in the cache`);
    out.push(`  largest free block   ${humanBytes(r.largestFree).padStart(11)}   a bigger request needs a new segment`);
    out.push(`  external frag.       ${pct(r.external).padStart(11)}   1 - largest free / free (0% = the free memory is one block)`);
    out.push(`  scatter              ${pct(r.scatter).padStart(11)}   1 - sum(free block^2) / free^2 (near 100% = many small pieces)`);
    out.push(`  releasable           ${humanBytes(r.releasable).padStart(11)}   free in segments with no live block: empty_cache() returns it`);
    out.push(`  stranded             ${humanBytes(r.stranded).padStart(11)}   free in segments that still hold live blocks: kept until they are freed`);
    out.push(`  rounding             ${humanBytes(r.rounding).padStart(11)}   allocated beyond what callers asked for`);
    for (const [name, p] of [['small', r.pools.small], ['large', r.pools.large]] as const) {
      out.push(`  ${name} pool: ${humanBytes(p.reserved)} reserved, ${humanBytes(p.free)} free, ` +
        `largest ${humanBytes(p.largestFree)}, external ${pct(p.external)}, scatter ${pct(p.scatter)}`);
    }
    if (r.segments.length > 0) {
      const shown = r.segments.slice(0, top);
      out.push(`  segments with free memory (${shown.length} of ${r.segments.length}, most free first; # allocated, ~ pending free, . free):`);
      for (const s of shown) {
        out.push(`    ${hex(s.address).padEnd(16)} ${s.segmentType.padEnd(5)} ${humanBytes(s.total).padStart(10)} ` +
          `free ${humanBytes(s.free).padStart(10)} in ${String(s.freeBlocks).padStart(3)} blocks ` +
          `largest ${humanBytes(s.largestFree).padStart(10)}${s.releasable ? ' releasable' : ''}`);
        out.push(`      [${s.map}]`);
      }
    }
  }
  return `${out.join('\n')}\n`;
}

function groupRows(title: string, rows: GroupDelta[], top: number): string[] {
  if (rows.length === 0) return [`${title}: no change`];
  const out = [`${title} (${Math.min(top, rows.length)} of ${rows.length} changed, largest change first):`];
  for (const g of rows.slice(0, top)) {
    out.push(`  ${signed(g.deltaBytes).padStart(12)}  ${String(g.countA).padStart(5)} -> ${String(g.countB).padEnd(5)} ` +
      `${humanBytes(g.bytesA).padStart(10)} -> ${humanBytes(g.bytesB).padEnd(10)}  ${g.key}`);
  }
  return out;
}

export function renderDiff(a: string, b: string, d: SnapshotDiff, top: number): string {
  const out = [
    `A: ${a}`,
    `B: ${b}`,
    `reserved  ${humanBytes(d.reservedA).padStart(11)} -> ${humanBytes(d.reservedB).padEnd(11)} (${signed(d.reservedB - d.reservedA)})`,
    `allocated ${humanBytes(d.allocatedA).padStart(11)} -> ${humanBytes(d.allocatedB).padEnd(11)} (${signed(d.allocatedB - d.allocatedA)})`,
    '',
    ...groupRows('live memory by allocation stack', d.byStack, top),
    '',
    ...groupRows('live memory by tag', d.byTag, top),
  ];
  if (d.byRegion.length > 0) {
    out.push('', 'annotated regions (bytes allocated / freed inside them, net change B - A):');
    for (const r of d.byRegion.slice(0, top)) {
      out.push(`  ${signed(r.deltaNet).padStart(12)}  ${r.name}: A ${r.a.runs} runs, +${humanBytes(r.a.allocated)} ` +
        `-${humanBytes(r.a.freed)}; B ${r.b.runs} runs, +${humanBytes(r.b.allocated)} -${humanBytes(r.b.freed)}`);
    }
  }
  return `${out.join('\n')}\n`;
}

export function renderLeaks(r: LeakReport, top: number, minSteps: number): string {
  const out: string[] = [];
  const where = r.host ? 'pinned host memory' : `device ${r.device}`;
  if (r.marker === null) {
    out.push(`${where}: no step markers in the history, so every allocation it made that is still ` +
      'live is listed (mark steps with memory.annotate(\'step\', fn) to find what outlives them)');
  } else {
    out.push(`${where}: ${r.steps} steps marked by '${r.marker}'; allocations still live ` +
      `${minSteps} or more steps after the step that made them:`);
  }
  out.push(`  ${r.survivors.count} allocations, ${humanBytes(r.survivors.bytes)}; ` +
    `${r.olderThanHistory.count} live blocks (${humanBytes(r.olderThanHistory.bytes)}) are older than the history`);
  if (r.groups.length === 0) out.push('  nothing outlives its step');
  for (const g of r.groups.slice(0, top)) {
    const flag = g.growing ? 'GROWS' : 'once ';
    const steps = r.marker === null ? '' : g.steps > 1 ? ` from ${g.steps} steps (${g.firstStep}..${g.lastStep})` : ` from step ${g.firstStep}`;
    out.push(`  ${flag} ${humanBytes(g.bytes).padStart(10)} in ${String(g.count).padStart(4)} allocations${steps}`);
    out.push(`        ${g.key}`);
  }
  if (r.groups.length > top) out.push(`  ... ${r.groups.length - top} more stacks (--top to show them)`);
  return `${out.join('\n')}\n`;
}

function startText(st: ReplayReport['start']): string {
  if (st.segments === 0) return st.allocated > 0 ? ' and were allocated first' : '';
  return `; the ${st.segments} segments of that time were rebuilt with ${st.placed} of them at their recorded offsets` +
    (st.sizedFromRequest > 0 ? ` (${st.sizedFromRequest} sized from their request)` : '') +
    (st.allocated > 0 ? `, ${st.allocated} allocated after` : '') +
    (st.lostSegmentAlloc ? '; the ring began inside a request, after its segment_alloc: that segment counts as made by the first entry' : '');
}

export function renderReplay(file: string, r: ReplayReport, engine: string): string {
  const side = (label: string, x: ReplayReport['recorded']) =>
    `  ${label.padEnd(9)} start ${humanBytes(x.startReserved).padStart(11)}  peak ${humanBytes(x.peakReserved).padStart(11)}  ` +
    `end ${humanBytes(x.endReserved).padStart(11)}  segments +${x.segmentGrowths} -${x.segmentShrinks}`;
  const out = [
    `${file}: device ${r.device}, ${r.entries} entries replayed on a simulated ${humanBytes(r.capacityBytes)} device ` +
      `with settings '${r.settings || '(defaults)'}' (${engine} engine)`,
    `  ${r.allocs} allocs, ${r.frees} frees; ${r.initialLive.count} allocations (${humanBytes(r.initialLive.bytes)}) ` +
      `were live when the history began${startText(r.start)}`,
    'reserved memory:',
    side('recorded', r.recorded),
    side('ours', r.ours),
  ];
  const growth = (x: ReplayReport['recorded']) => x.peakReserved - x.startReserved;
  const d = growth(r.ours) - growth(r.recorded);
  out.push(`  growth from the start to the peak: recorded ${humanBytes(growth(r.recorded))}, ours ${humanBytes(growth(r.ours))}` +
    (d === 0 ? ' (the same)' : ` (ours ${signed(d)})`));
  if (r.firstDivergence === null) {
    out.push('  reserved memory grew and shrank exactly as recorded');
  } else {
    const f = r.firstDivergence;
    out.push(`  first difference at entry ${f.index} (${f.action}): recorded growth ${signed(f.recordedGrowth)}, ours ${signed(f.ourGrowth)}`);
    out.push(`    why: ${f.reason}`);
  }
  const ev = r.segmentEvents;
  out.push(ev.firstMismatch === null
    ? `  segment events: the same ${ev.recorded}, in the same order`
    : `  segment events: recorded ${ev.recorded}, ours ${ev.ours}; event ${ev.firstMismatch.at} differs ` +
      `(recorded ${ev.firstMismatch.recorded}, ours ${ev.firstMismatch.ours})`);
  if (r.cacheReleases > 0) {
    out.push(`  ${r.cacheReleases} cache releases (empty_cache(), a MemPool's end, or inside a request before its retry or OOM), ` +
      'each replayed as what it was read to be');
  }
  if (r.ooms.recorded > 0) {
    out.push(`  out-of-memory: ${r.ooms.reproduced} of the ${r.ooms.recorded} recorded happen here too, with the same request`);
  }
  if (r.start.allocated > 0 && r.initialLive.count > 0) {
    out.push(`  note: ${r.start.allocated} of the allocations live at the start were made by allocating, in address order ` +
      '(they lie in no segment the recording shows, or segments are expandable), not placed where they were');
  }
  if (r.unknownFrees > 0) out.push(`  ${r.unknownFrees} frees of addresses nothing explains were skipped`);
  if (r.poolAllocs > 0) out.push(`  ${r.poolAllocs} allocations of private pools (MemPools), replayed into a MemPool each`);
  if (r.inferredPools) {
    out.push(`  the trace names no pool: ${r.inferredPools.allocs} allocations read as made in ${r.inferredPools.pools} private ` +
      `pool${r.inferredPools.pools === 1 ? '' : 's'} from where the cache was released (see docs/tools.md)`);
  }
  if (r.oom) {
    out.push(`  OUT OF MEMORY ${r.oom.index < 0 ? 'before the first entry (the starting state does not fit)' : `at entry ${r.oom.index}`} ` +
      `(alloc of ${humanBytes(r.oom.size)}): ${r.oom.message.split('\n')[0]}`);
  }
  return `${out.join('\n')}\n`;
}

export function renderWhatIf(file: string, r: WhatIfReport): string {
  const head = ['settings', 'peak reserved', 'end reserved', 'device mallocs', 'largest free at peak', 'fragmentation at peak', 'OOMs', 'time'];
  const rows = r.rows.map((w) => [
    `${w.settings || '(defaults)'}${w.recorded ? ' (recorded)' : ''}`,
    humanBytes(w.peakReserved), humanBytes(w.endReserved), String(w.deviceMallocs), humanBytes(w.largestFreeAtPeak),
    `${(100 * w.fragmentationAtPeak).toFixed(1)}%`,
    w.stoppedAt !== null ? `stops at entry ${w.stoppedAt}` : w.ooms.recorded ? `${w.ooms.here} of ${w.ooms.recorded}` : '0',
    `${(w.ms / 1000).toFixed(2)} s`,
  ]);
  const widths = head.map((h, c) => rows.reduce((n, row) => Math.max(n, row[c]!.length), h.length));
  const line = (row: string[]) => row.map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!))).join('  ').trimEnd();
  return [
    `${file}: device ${r.device}, ${r.entries} entries, each setting replayed on a simulated ${humanBytes(r.capacityBytes)} device ` +
      `(${r.engine} engine, ${r.workers} threads, ${(r.ms / 1000).toFixed(2)} s in all)`,
    line(head), ...rows.map(line),
    'OOMs: of the recorded out-of-memory errors, how many happen under the setting too; "stops at" means an allocation',
    'the program made does not fit under it.',
  ].join('\n') + '\n';
}
