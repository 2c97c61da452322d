// The allocator's options table (native/allocator/policy/options.h), read from a replay engine
// (the addon, or its wasm build where it cannot load): the one description of every option,
// used here to write a settings dict (PyTorch's allocator_settings, as a snapshot carries it)
// back as the config string that gives it.
import type { AllocatorOptionRow } from '../binding.js';

const MiB = 2 ** 20;

/** Where the table and the defaults come from (a ReplayEngine is one). */
export interface OptionsSource {
  options(): AllocatorOptionRow[];
  settingsDict(settings: string): Record<string, unknown>;
}

/** Equal as settings values are (numbers, booleans, strings, objects of them), key order aside:
 *  no Node API, so the viewer's worker bundle takes this file as it is. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const tables = new WeakMap<OptionsSource, { rows: AllocatorOptionRow[]; defaults: Record<string, unknown> }>();

/** `value` as a config string writes it for `row`, or undefined if it is not such a value. */
function valueText(row: AllocatorOptionRow, value: unknown): string | undefined {
  switch (row.kind) {
    case 'megabytes':  // the dict shows these in bytes
      return typeof value === 'number' && value > 0 ? String(Math.floor(value / MiB)) : undefined;
    case 'count':
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? (value ? 'True' : 'False') : undefined;
    case 'divisions':
      if (value === null || typeof value !== 'object') return undefined;
      return `[${Object.entries(value).filter(([, v]) => typeof v === 'number').map(([k, v]) => `${k}:${v}`).join(',')}]`;
    case 'word':
      return typeof value === 'string' ? value : undefined;
  }
}

/**
 * The config string for a settings dict: each option whose dict entry differs from the
 * default, as `key:value`, in the table's order ('' when all are defaults). Entries the
 * dict does not have, or whose values are of the wrong type, are left at their defaults.
 */
export function configFromSettings(settings: Record<string, unknown>, source: OptionsSource): string {
  let table = tables.get(source);
  if (table === undefined) tables.set(source, (table = { rows: source.options(), defaults: source.settingsDict('') }));
  const { rows, defaults } = table;
  const parts: string[] = [];
  for (const row of rows) {
    if (row.setting === null || !(row.setting in settings)) continue;
    const value = settings[row.setting];
    if (sameValue(value, defaults[row.setting])) continue;
    const text = valueText(row, value);
    if (text !== undefined) parts.push(`${row.key}:${text}`);
  }
  return parts.join(',');
}
