// Every cca command refuses bad files and bad options the same way: exit status 1, one
// line on stderr ending in a stable code, nothing on stdout, no stack trace, and no file
// written (viz's HTML, convert's target, or a dump's temporary file).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { memory } from '../../lib/index.js';
import { freshSim } from '../support/helpers.js';
import { specialFiles } from '../support/special-files.mjs';
import { tempDir } from '../support/temp-dir.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.pickle', import.meta.url));
const dir = tempDir('cca-cli-bad-');
const out = join(dir, 'out');
mkdirSync(out);

const fixture = readFileSync(FIXTURE);
const files: Record<string, string> = {};
const put = (name: string, bytes: Uint8Array | string) => {
  files[name] = join(dir, name);
  writeFileSync(files[name]!, bytes);
};
put('empty.pickle', '');
put('truncated.pickle', fixture.subarray(0, 100_000));
put('text.pickle', 'hello');
put('bad-field.json', JSON.stringify({ segments: [{ device: 0, address: 0, total_size: 'x', stream: 0, segment_type: 'large', blocks: [] }] }));
put('global.pickle', Buffer.from([0x80, 0x04, 0x63, ...Buffer.from('os\nsystem\n'), 0x2e]));
// FIFOs, sockets, devices and links to them: refused before they are opened, so none blocks.
const special = await specialFiles(join(dir, 'special'));
afterAll(() => special.close());
// Every command meets the FIFO; the other special files go through the same reader, and
// one command each shows it.
const BAD_FILES = ['/nonexistent.pickle', dir, '/dev/zero', special.paths.fifo!, ...Object.values(files)];

function cca(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
}

function expectRefused(args: string[]): void {
  const r = cca(...args);
  const where = `cca ${args.join(' ')}`;
  expect(r.status, `${where}: ${r.stderr}`).toBe(1);
  expect(r.stdout, where).toBe('');
  expect(r.stderr, where).toMatch(/^cca: .+ \(ERR_[A-Z_]+\)\n$/);
  expect(r.stderr, where).not.toMatch(/\n\s+at /);  // no stack trace
  expect(readdirSync(out), where).toEqual([]);
}

describe('cca with bad files', () => {
  const commands: string[][] = [
    ['summary'], ['segments'], ['trace'], ['frag'], ['leaks'], ['replay'], ['replay', '--what-if'], ['viz', '-o', join(out, 'v.html')],
    ['convert', '%', join(out, 'c.json')],
  ];
  it.each(commands.map((c) => [c.slice(0, 2).filter((a) => a.startsWith('--') || a === c[0]).join(' '), c] as const))('%s', (_name, command) => {
    for (const f of BAD_FILES) {
      const args = command.includes('%') ? command.map((a) => (a === '%' ? f : a)) : [command[0]!, f, ...command.slice(1)];
      expectRefused(args);
    }
  });
  it('diff, on either side', () => {
    for (const f of BAD_FILES) {
      expectRefused(['diff', f, FIXTURE]);
      expectRefused(['diff', FIXTURE, f]);
    }
  });
  it('every special file, refused as coded and at once', () => {
    for (const [label, f] of Object.entries(special.paths)) {
      const r = cca('summary', f);
      expect(r.stderr, label).toMatch(/ is (a pipe \(FIFO\)|a socket|a device|a directory), not a regular file;.*\(ERR_CCA_NOT_A_FILE\)\n$/);
      expectRefused(['summary', f]);
    }
  });
  it('names the bad field of a file that parses', () => {
    expect(cca('summary', files['bad-field.json']!).stderr).toMatch(/segments\[0\]\.total_size: expected a non-negative integer, got "x".*\(ERR_CCA_CORRUPT_SNAPSHOT\)/);
    expect(cca('frag', files['global.pickle']!).stderr).toMatch(/names Python code.*\(ERR_CCA_UNSAFE_PICKLE\)/);
    expect(cca('--max-bytes', '1000', 'summary', FIXTURE).stderr).toMatch(/more than the limit of 1000.*--max-bytes.*\(ERR_CCA_FILE_TOO_LARGE\)/);
  });
});

describe('cca with bad options', () => {
  const cases: string[][] = [
    ['trace', FIXTURE, '--device', 'x'], ['trace', FIXTURE, '--device', '-1'], ['trace', FIXTURE, '--device', '1.5'],
    ['trace', FIXTURE, '--limit', '0'], ['trace', FIXTURE, '--skip', 'NaN'], ['frag', FIXTURE, '--top', '0'],
    ['diff', FIXTURE, FIXTURE, '--depth', '0'], ['leaks', FIXTURE, '--min-steps', 'x'], ['leaks', FIXTURE, '--marker', 'nope'],
    ['replay', FIXTURE, '--capacity-mb', '0'], ['replay', FIXTURE, '--settings', 'bogus:1'],
    ['replay', FIXTURE, '--settings', 'expandable_segments:yes'], ['summary', FIXTURE, '--bogus'], ['--max-bytes', '0', 'summary', FIXTURE],
    ['summary'], ['diff', FIXTURE], ['viz'], ['convert', FIXTURE], ['nosuch'], ['demo', '-n', '0'], ['demo', '-n', 'x'],
    ['viz', FIXTURE, '-o', join(dir, 'no-such-dir', 'v.html')], ['convert', FIXTURE, out],
    ['convert', FIXTURE, join(dir, 'no-such-dir', 'c.pickle')],
    ...Object.values(special.paths).filter((p) => p !== '/dev/stdin').flatMap((p) => [['viz', FIXTURE, '-o', p], ['convert', FIXTURE, p]]),
  ];
  it.each(cases.map((c) => [c.join(' ').replaceAll(dir, '$TMP').replaceAll(FIXTURE, 'fixture'), c] as const))('%s', (_label, args) => {
    expectRefused(args);
  });
});

describe('a failed dump leaves nothing behind', () => {
  it('no temporary file after a dump into a missing folder or onto a directory', async () => {
    freshSim();
    memory._record_memory_history({ enabled: 'all' });
    const target = tempDir('cca-dump-fail-');
    for (const path of [join(target, 'missing', 'x.pickle'), target, join(target, 'sub')]) {
      if (path.endsWith('sub')) mkdirSync(path);
      await expect(memory._dump_snapshot(path)).rejects.toMatchObject({ code: expect.stringMatching(/^ERR_CCA_(FILE_UNWRITABLE|NOT_A_FILE)$/) });
    }
    expect(readdirSync(target)).toEqual(['sub']);
    expect(readdirSync(join(target, 'sub'))).toEqual([]);
    expect(existsSync(`${target}.tmp-${process.pid}`)).toBe(false);
    memory._record_memory_history(null);
  });
});
