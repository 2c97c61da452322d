// The hand-written binding.d.ts and the addon's exports must not drift apart.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { native } from '../../lib/native.js';

describe('binding.d.ts', () => {
  it('declares exactly the functions the addon exports', () => {
    const dts = readFileSync(new URL('../../binding.d.ts', import.meta.url), 'utf8');
    const body = dts.slice(dts.indexOf('interface NativeBinding'));
    const declared = [...body.matchAll(/^\s{2}(\w+)\(/gm)].map((m) => m[1]).sort();
    const exported = Object.keys(native).sort();
    expect(declared).toEqual(exported);
    for (const name of exported) expect(typeof (native as unknown as Record<string, unknown>)[name]).toBe('function');
  });
});
