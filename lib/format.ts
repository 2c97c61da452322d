// Human-readable sizes and counts.
import { typeError } from './validate.js';

/** PyTorch's format_size, as used in out-of-memory messages: "512 bytes", "1.50 MiB". */
export function formatSize(bytes: number): string {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) throw typeError('a finite number of bytes', 'bytes', bytes);
  if (bytes <= 1024) return `${bytes} bytes`;
  if (bytes <= 1024 ** 2) return `${(bytes / 1024).toFixed(2)} KiB`;
  if (bytes <= 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(2)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

const SIZE_UNITS = ['B  ', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
const COUNT_UNITS = [' ', 'K', 'M'];

/** A 10-character table cell for a byte count: integer in the largest unit under 768 of it. */
export function sizeCell(bytes: number): string {
  let value = Math.trunc(bytes);
  let unit = 0;
  while (unit < SIZE_UNITS.length - 1 && Math.abs(value) >= 768 * 1024) {
    value = Math.trunc(value / 1024);
    unit += 1;
  }
  return `${String(value).padStart(6)} ${SIZE_UNITS[unit]}`;
}

/** A 10-character table cell for a count: thousands and millions from 750,000 up. */
export function countCell(count: number): string {
  let value = Math.trunc(count);
  let unit = 0;
  while (unit < COUNT_UNITS.length - 1 && Math.abs(value) >= 750_000) {
    value = Math.trunc(value / 1000);
    unit += 1;
  }
  return `${String(value).padStart(7)} ${COUNT_UNITS[unit]} `;
}

/** "1.23 GiB"-style text for prose (demo, CLI). */
export function humanBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(2)} ${units[u]}`;
}
