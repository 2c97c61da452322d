// Text renderings of a snapshot for the CLI.
import { humanBytes } from '../format.js';
import { HOST_DEVICE, type DeviceSummary } from '../analysis/summary.js';
import { topFrame } from '../analysis/frames.js';
import type { Snapshot, TraceEntry } from '../snapshot/types.js';

const hex = (n: number | bigint | undefined): string => (n === undefined ? '-' : `0x${n.toString(16)}`);

/** One row per file and device: what `cca summary A B C` prints for several ranks. */
export function renderSummaryTable(files: { path: string; devices: DeviceSummary[] }[]): string {
  const head = ['file', 'device', 'reserved', 'peak reserved', 'allocated', 'cached', 'largest free', 'fragmentation', 'OOMs'];
  const rows: string[][] = [];
  for (const f of files) {
    if (f.devices.length === 0) rows.push([f.path, '-', '0 B', '0 B', '0 B', '0 B', '0 B', '-', '0']);
    for (const s of f.devices) {
      rows.push([f.path, s.device === HOST_DEVICE ? 'host' : String(s.device), humanBytes(s.reserved), humanBytes(s.peakReserved), humanBytes(s.allocated),
        humanBytes(s.cached), humanBytes(s.largestFreeBlock), `${(100 * s.externalFragmentation).toFixed(1)}%`, String(s.ooms)]);
    }
  }
  const widths = head.map((h, c) => rows.reduce((w, r) => Math.max(w, r[c]!.length), h.length));
  const line = (r: string[]) => r.map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!))).join('  ').trimEnd();
  return `${[line(head), ...rows.map(line)].join('\n')}\n`;
}

export function renderSnapshotSummary(path: string, summaries: DeviceSummary[], snapshot: Snapshot): string {
  const out: string[] = [`${path}`];
  if (summaries.length === 0) out.push('  no segments and no history');
  for (const s of summaries) {
    if (s.device === HOST_DEVICE) {
      out.push(...hostSummaryLines(s));
      continue;
    }
    const pct = (n: number) => (s.reserved ? ` (${((100 * n) / s.reserved).toFixed(1)}% of reserved)` : '');
    out.push(`device ${s.device}: ${s.segments} segments`);
    out.push(`  reserved   ${humanBytes(s.reserved).padStart(12)}   held from the device by the allocator: what nvidia-smi shows (plus the CUDA context)`);
    if (s.peakReserved > s.reserved) out.push(`  peak       ${humanBytes(s.peakReserved).padStart(12)}   the most reserved during the recorded history`);
    out.push(`  allocated  ${humanBytes(s.allocated).padStart(12)}   in live allocations${pct(s.allocated)}`);
    out.push(`  active     ${humanBytes(s.active).padStart(12)}   allocated, plus frees waiting for other streams`);
    out.push(`  requested  ${humanBytes(s.requested).padStart(12)}   what callers asked for; active - requested is rounding`);
    out.push(`  cached     ${humanBytes(s.cached).padStart(12)}   reserved but free: reused without a device call; empty_cache() returns the unsplit part`);
    out.push(`  largest free block ${humanBytes(s.largestFreeBlock)}; external fragmentation ${(100 * s.externalFragmentation).toFixed(1)}% (0% = the free memory is one block)`);
    out.push(`  blocks: ${Object.entries(s.blocksByState).map(([k, v]) => `${v} ${k}`).join(', ') || 'none'}`);
    if (s.traceEntries > 0) {
      out.push(`  history: ${s.traceEntries} entries over ${s.traceSpanMs.toFixed(1)} ms: ` +
        Object.entries(s.traceByAction).map(([k, v]) => `${v} ${k}`).join(', '));
    }
    if (s.ooms > 0) out.push(`  out of memory ${s.ooms} time${s.ooms === 1 ? '' : 's'} during the history`);
  }
  const settings = snapshot.allocator_settings;
  if (settings && typeof settings === 'object') {
    const conf = (settings as Record<string, unknown>).PYTORCH_CUDA_ALLOC_CONF;
    out.push(`allocator settings: ${conf ? String(conf) : '(defaults)'}`);
  }
  return `${out.join('\n')}\n`;
}

// Pinned host memory (PyTorch 2.14's host history): what the host allocator holds.
function hostSummaryLines(s: DeviceSummary): string[] {
  const out = [`pinned host memory: ${s.segments} blocks`];
  out.push(`  pinned     ${humanBytes(s.reserved).padStart(12)}   page-locked memory the host allocator holds (counts against ulimit -l)`);
  if (s.peakReserved > s.reserved) out.push(`  peak       ${humanBytes(s.peakReserved).padStart(12)}   the most pinned during the recorded history`);
  out.push(`  in use     ${humanBytes(s.allocated).padStart(12)}   handed out (cuda.allocHost, pin_memory())`);
  out.push(`  waiting    ${humanBytes(s.active - s.allocated).padStart(12)}   freed, waiting for the copies that use them`);
  out.push(`  cached     ${humanBytes(s.cached).padStart(12)}   free for reuse; empty_host_cache() returns it`);
  out.push(`  blocks: ${Object.entries(s.blocksByState).map(([k, v]) => `${v} ${k}`).join(', ') || 'none'}`);
  if (s.traceEntries > 0) {
    out.push(`  history: ${s.traceEntries} entries over ${s.traceSpanMs.toFixed(1)} ms: ` +
      Object.entries(s.traceByAction).map(([k, v]) => `${v} ${k}`).join(', '));
  }
  return out;
}

export function renderSegments(snapshot: Snapshot): string {
  const rows = [['device', 'address', 'type', 'stream', 'pool', 'total', 'allocated', 'blocks', 'largest free']];
  for (const s of snapshot.segments) {
    const free = s.blocks.filter((b) => b.state === 'inactive').reduce((m, b) => Math.max(m, b.size), 0);
    rows.push([
      String(s.device), hex(s.address), `${s.segment_type ?? '?'}${s.is_expandable ? ' (exp)' : ''}`, hex(s.stream),
      Array.isArray(s.segment_pool_id) ? `(${s.segment_pool_id.join(',')})` : '-', humanBytes(s.total_size),
      humanBytes(s.allocated_size ?? 0), String(s.blocks.length), humanBytes(free),
    ]);
  }
  const widths = rows[0]!.map((_, c) => rows.reduce((w, r) => Math.max(w, r[c]!.length), 0));
  const table = rows.map((r) => r.map((cell, c) => (c === 0 || c > 4 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  '));
  return `${[...table, ...poolTotals(snapshot)].join('\n')}\n`;
}

// Where MemPools hold segments: each pool's reserved and allocated memory, per device.
function poolTotals(snapshot: Snapshot): string[] {
  const totals = new Map<string, { device: number; pool: string; segments: number; reserved: number; allocated: number }>();
  for (const s of snapshot.segments) {
    const pool = Array.isArray(s.segment_pool_id) ? `(${s.segment_pool_id.join(', ')})` : '(0, 0)';
    const key = `${s.device} ${pool}`;
    const t = totals.get(key) ?? { device: s.device, pool, segments: 0, reserved: 0, allocated: 0 };
    t.segments += 1;
    t.reserved += s.total_size;
    t.allocated += s.allocated_size ?? 0;
    totals.set(key, t);
  }
  if (![...totals.values()].some((t) => t.pool !== '(0, 0)')) return [];
  const out = ['', 'reserved by pool:'];
  for (const t of [...totals.values()].sort((a, b) => a.device - b.device || a.pool.localeCompare(b.pool))) {
    // PyTorch's ids: (n, 0) a CUDA graph's own pool; (0, n) a MemPool or a shared graph pool.
    const name = t.pool === '(0, 0)' ? '(0, 0) default' : t.pool.startsWith('(0,') ? `${t.pool} MemPool or shared graph pool`
      : `${t.pool} CUDA graph's own pool`;
    out.push(`  device ${t.device} ${name}: ${humanBytes(t.reserved)} reserved in ${t.segments} segment${t.segments === 1 ? '' : 's'}, ${humanBytes(t.allocated)} allocated`);
  }
  return out;
}

export interface TraceOptions {
  device: number;
  limit: number;
  skip: number;
  /** The pinned host memory's history (host_traces) instead of a device's. */
  host?: boolean;
}

export function renderTrace(snapshot: Snapshot, o: TraceOptions): string {
  const traces: TraceEntry[] = (o.host ? snapshot.host_traces : snapshot.device_traces[o.device]) ?? [];
  const t0 = traces.length ? traces[0]!.time_us : 0;
  const lines = [`${o.host ? 'pinned host memory' : `device ${o.device}`}: ${traces.length} entries${o.skip || o.limit < traces.length ? ` (showing ${o.skip}..${Math.min(traces.length, o.skip + o.limit) - 1})` : ''}`];
  for (let i = o.skip; i < Math.min(traces.length, o.skip + o.limit); i++) {
    const e = traces[i]!;
    const top = topFrame(e.frames);
    const where = top ? `  ${top.name} ${top.filename}:${top.line}` : '';
    // The allocation's label, or an annotate entry's note: what the memory is for.
    const label = e.user_metadata ? `  [${e.user_metadata}]` : '';
    const addr = e.action === 'oom' ? `free ${humanBytes(e.device_free ?? 0)}` : hex(e.addr);
    const ms = typeof e.time_us === 'number' ? ((e.time_us - t0) / 1000).toFixed(3).padStart(10) : '         ?';
    lines.push(`${String(i).padStart(7)} ${ms} ms  ${e.action.padEnd(15)} ${addr.padEnd(16)} ${humanBytes(e.size).padStart(11)}  stream ${hex(e.stream)}${label}${where}`);
  }
  return `${lines.join('\n')}\n`;
}
