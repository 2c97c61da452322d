// Nothing a user hands the library as a file can block it: a FIFO with no writer, a
// socket, a device, a directory, or a link to one of them is refused at once with
// ERR_CCA_NOT_A_FILE, for reading (loadSnapshot) and for writing (_dump_snapshot), and a
// refused write leaves the special file as it was. The calls run in a child process with a
// time limit: a blocking open() would stall this process's event loop, and with it any
// timer that could fail the test.
import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { specialFiles } from '../support/special-files.mjs';
import { tempDir } from '../support/temp-dir.js';

const ENTRY = new URL('../../dist/index.js', import.meta.url).href;
const dir = tempDir('cca-special-');
const special = await specialFiles(join(dir, 'special'));
afterAll(() => special.close());

function inChild(code: string): Record<string, string> {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8', timeout: 60_000, env: { ...process.env, CCA_DEVICE: 'sim' },
  });
  expect(r.signal, `the child was killed (a call blocked?): ${r.stderr}`).toBe(null);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, string>;
}

describe('special files', () => {
  it('are refused by loadSnapshot before they are opened', () => {
    const got = inChild(`
      import { loadSnapshot } from ${JSON.stringify(ENTRY)};
      const out = {};
      for (const [label, path] of Object.entries(${JSON.stringify(special.paths)})) {
        try { loadSnapshot(path); out[label] = 'read'; } catch (e) { out[label] = e.code + ': ' + e.message; }
      }
      console.log(JSON.stringify(out));`);
    for (const [label, path] of Object.entries(special.paths)) {
      expect(got[label], label).toMatch(/^ERR_CCA_NOT_A_FILE: /);
      expect(got[label], label).toContain(path);
    }
    expect(got.fifo).toMatch(/is a pipe \(FIFO\), not a regular file/);
    expect(got.socket).toMatch(/is a socket/);
    expect(got['dev-zero']).toMatch(/is a device/);
  });

  it('are refused as the target of a dump, which leaves them as they were', () => {
    const got = inChild(`
      import { cuda, memory } from ${JSON.stringify(ENTRY)};
      memory._record_memory_history({ enabled: 'all' });
      cuda.alloc(4096).free();
      const out = {};
      for (const [label, path] of Object.entries(${JSON.stringify(special.paths)})) {
        if (label === 'dev-stdin') continue;
        try { await memory._dump_snapshot(path); out[label] = 'written'; } catch (e) { out[label] = e.code; }
      }
      console.log(JSON.stringify(out));`);
    const targets = Object.keys(special.paths).filter((l) => l !== 'dev-stdin');
    expect(got).toEqual(Object.fromEntries(targets.map((l) => [l, 'ERR_CCA_NOT_A_FILE'])));
    expect(lstatSync(special.paths.fifo!).isFIFO()).toBe(true);
    expect(lstatSync(special.paths['fifo-link']!).isSymbolicLink()).toBe(true);
    expect(readdirSync(join(dir, 'special')).sort()).toEqual(['a.fifo', 'a.sock', 'fifo-link.pickle', 'folder.pickle', 'zero-link.json']);
  });
});
