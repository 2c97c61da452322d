// interop's JS side: the table's address, the header's folder, and clients' usage before
// any native code opened one (test/contract/interop.test.ts drives a real C consumer).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { interop, memory } from '../../lib/index.js';

describe('interop', () => {
  it('gives one stable table address and the folder of cca.h', () => {
    const a = interop.allocatorApi();
    expect(typeof a).toBe('bigint');
    expect(a).not.toBe(0n);
    expect(interop.allocatorApi()).toBe(a);
    const header = join(interop.includeDir, 'cca.h');
    expect(existsSync(header)).toBe(true);
    expect(readFileSync(header, 'utf8')).toMatch(/typedef struct cca_api_v1 \{/);
  });
  it('lists no clients and adds no stats keys until native code opens one', () => {
    expect(interop.clients()).toEqual([]);
    expect(interop.clients(0)).toEqual([]);
    expect(Object.keys(memory.memory_stats()).some((k) => k.startsWith('clients.'))).toBe(false);
  });
  it('checks the device it is asked about', () => {
    expect(() => interop.clients(99)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => interop.clients(-1)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
  });
});
