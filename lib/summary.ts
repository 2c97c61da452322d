// memory_summary(): the stats as a text table in the shape of torch.cuda.memory_summary.
import { countCell, sizeCell } from './format.js';

type Cell = (v: number) => string;

const ROWS: ReadonlyArray<[key: string, title: string, cell: Cell]> = [
  ['allocated_bytes', 'Allocated memory', sizeCell],
  ['active_bytes', 'Active memory', sizeCell],
  ['requested_bytes', 'Requested memory', sizeCell],
  ['reserved_bytes', 'GPU reserved memory', sizeCell],
  ['inactive_split_bytes', 'Non-releasable memory', sizeCell],
  ['allocation', 'Allocations', countCell],
  ['active', 'Active allocs', countCell],
  ['segment', 'GPU reserved segments', countCell],
  ['inactive_split', 'Non-releasable allocs', countCell],
];

const INNER = 75;
const rule = (c: string): string => `|${c.repeat(INNER)}|`;
const centered = (text: string): string => {
  const pad = Math.max(0, INNER - text.length);
  const left = Math.floor(pad / 2);
  return `|${' '.repeat(left)}${text}${' '.repeat(pad - left)}|`;
};
const line = (title: string, cells: string[]): string =>
  `| ${title.padEnd(21)} | ${cells.map((c) => c.padStart(10)).join(' | ')} |`;

export interface SummaryInput {
  device: number;
  deviceName: string;
  stats: Record<string, number>;
  abbreviated: boolean;
}

export function renderSummary({ device, deviceName, stats, abbreviated }: SummaryInput): string {
  const out: string[] = [];
  out.push(rule('='));
  out.push(centered(`cuda-caching-allocator memory summary, device ID ${device}`));
  out.push(centered(deviceName.length <= INNER - 2 ? deviceName : `${deviceName.slice(0, INNER - 5)}...`));
  out.push(rule('-'));
  const left = `CUDA OOMs: ${stats.num_ooms}`;
  const right = `cudaMalloc retries: ${stats.num_alloc_retries}`;
  out.push(`|${left.padStart(21).padEnd(37)}|${right.padStart(27).padEnd(37)}|`);
  out.push(rule('='));
  out.push(line('       Metric', ['Cur Usage ', 'Peak Usage', 'Tot Alloc ', 'Tot Freed ']));
  const fields = ['current', 'peak', 'allocated', 'freed'];
  for (const [key, title, cell] of ROWS) {
    out.push(rule('-'));
    const pools: Array<[string, string]> = [['all', title]];
    if (!abbreviated) pools.push(['large_pool', '      from large pool'], ['small_pool', '      from small pool']);
    for (const [pool, name] of pools) {
      out.push(line(name, fields.map((f) => cell(stats[`${key}.${pool}.${f}`] ?? 0))));
    }
  }
  out.push(rule('-'));
  out.push(line('Oversize allocations', fields.map((f) => countCell(stats[`oversize_allocations.${f}`] ?? 0))));
  out.push(line('Oversize GPU segments', fields.map((f) => countCell(stats[`oversize_segments.${f}`] ?? 0))));
  // Each MemPool's share of the reserved memory (reserved_bytes_by_private_pools).
  const prefix = 'reserved_bytes_by_private_pools.';
  const pools = [...new Set(Object.keys(stats).filter((k) => k.startsWith(prefix)).map((k) => k.split('.')[1]!))];
  if (pools.length > 0) {
    out.push(rule('-'));
    out.push(centered('GPU reserved memory by MemPool (reserved_bytes_by_private_pools)'));
  }
  for (const id of pools) {
    out.push(rule('-'));
    const rows: Array<[string, string]> = [['all', `MemPool (${id.replace('_', ', ')})`]];
    if (!abbreviated) rows.push(['large_pool', '      from large pool'], ['small_pool', '      from small pool']);
    for (const [pool, name] of rows) out.push(line(name, fields.map((f) => sizeCell(stats[`${prefix}${id}.${pool}.${f}`] ?? 0))));
  }
  out.push(rule('='));
  return `${out.join('\n')}\n`;
}
