// Segments as address ranges: which one holds an address, by binary search over a list
// sorted by address (replay's start, its reading of pools, the viewer's pool timeline).

export interface AddressRange {
  address: number;
  size: number;
}

/** The range of `sorted` (by address, not overlapping) that holds `addr`, if any. */
export function rangeHolding<T extends AddressRange>(sorted: readonly T[], addr: number): T | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.address <= addr) lo = mid + 1;
    else hi = mid;
  }
  const r = sorted[lo - 1];
  return r && addr < r.address + r.size ? r : undefined;
}
