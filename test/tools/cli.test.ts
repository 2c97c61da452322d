// The cca command line on PyTorch's ResNet50 fixture and on our own dumps.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.pickle', import.meta.url));
const dir = tempDir('cca-cli-');
const cca = (...args: string[]) => execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

describe('cca on PyTorch\'s fixture', () => {
  it('summary explains the numbers', () => {
    const text = cca('summary', FIXTURE);
    expect(text).toContain('device 0: 46 segments');
    expect(text).toMatch(/reserved\s+562\.00 MiB/);
    expect(text).toMatch(/allocated\s+214\.81 MiB/);
    expect(text).toContain('what nvidia-smi shows');
    expect(text).toContain('6111 entries');
    const json = JSON.parse(cca('summary', FIXTURE, '--json'));
    expect(json[0]).toMatchObject({ device: 0, segments: 46, reserved: 589299712, allocated: 225240576, traceEntries: 6111 });
    expect(json[0].blocksByState).toEqual({ inactive: 45, active_allocated: 486 });
  });

  it('--version prints the package version; viz writes FILE.html when -o is not given', () => {
    expect(cca('--version').trim()).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
    const copy = join(dir, 'copy.pickle');
    copyFileSync(FIXTURE, copy);
    const r = spawnSync(process.execPath, [CLI, 'viz', copy], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(existsSync(`${copy}.html`)).toBe(true);
    // Sizes below 1 MiB in KiB, not "0.5 MiB".
    expect(r.stderr).toMatch(/^wrote .*copy\.pickle\.html \(\d+\.\d\d [KM]iB\); open it in a browser\n$/);
  });

  it('summary takes one file per rank and prints one row each, with peak reserved and OOMs', () => {
    const ranks = [0, 1].map((rank) => {
      const path = join(dir, `rank${rank}.pickle`);
      const code = `import { cuda, memory } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
        import { writeSnapshotFile } from ${JSON.stringify(new URL('../../dist/snapshot/dump.js', import.meta.url).href)};
        cuda.sim.configure({ capacityBytes: ${(rank + 1) * 64} * 2 ** 20 });
        memory._record_memory_history({ enabled: 'all' });
        const keep = [cuda.alloc(30 * 2 ** 20)];
        try { for (;;) keep.push(cuda.alloc(20 * 2 ** 20)); } catch {}
        keep.pop().free();
        writeSnapshotFile(memory._snapshot(), ${JSON.stringify(path)});`;
      execFileSync(process.execPath, ['--input-type=module', '-e', code]);
      return path;
    });
    const table = cca('summary', ...ranks, FIXTURE).trim().split('\n');
    expect(table).toHaveLength(4);
    expect(table[0]).toMatch(/^file\s+device\s+reserved\s+peak reserved\s+allocated\s+cached\s+largest free\s+fragmentation\s+OOMs$/);
    expect(table[1]).toMatch(/rank0\.pickle\s+0\s+50\.00 MiB\s+50\.00 MiB\s+30\.00 MiB\s+20\.00 MiB\s+20\.00 MiB\s+0\.0%\s+1$/);
    expect(table[2]).toMatch(/rank1\.pickle\s+0\s+110\.00 MiB\s+110\.00 MiB\s+90\.00 MiB/);
    expect(table[3]).toMatch(/pytorch-resnet50-snapshot\.pickle\s+0\s+562\.00 MiB/);
    const rows = JSON.parse(cca('summary', ...ranks, '--json'));
    expect(rows.map((r: { file: string }) => r.file)).toEqual(ranks);
    expect(rows[1].devices[0]).toMatchObject({ reserved: 110 * 2 ** 20, peakReserved: 110 * 2 ** 20, ooms: 1 });
  });

  it('segments lists each segment, trace each event with its Python frame', () => {
    expect(cca('segments', FIXTURE).trim().split('\n')).toHaveLength(47);
    const trace = cca('trace', FIXTURE, '--limit', '3', '--skip', '10').trim().split('\n');
    expect(trace).toHaveLength(4);
    expect(trace[0]).toContain('6111 entries (showing 10..12)');
    expect(trace[1]).toMatch(/^\s+10\s+[\d.]+ ms\s+(alloc|free_requested|free_completed)\s+0x[0-9a-f]+/);
    expect(trace[1]).toMatch(/\.py:\d+$/);
  });

  it('segments totals each MemPool\'s reserved memory when a snapshot has private pools', () => {
    const seg = (address: number, pool: number[], size: number, allocated: number) => ({
      device: 0, address, total_size: size, allocated_size: allocated, active_size: allocated, requested_size: allocated,
      stream: 0, segment_type: 'large', segment_pool_id: pool, is_expandable: false,
      blocks: [{ address, size, requested_size: allocated, state: allocated ? 'active_allocated' : 'inactive' }],
    });
    const file = join(dir, 'pools.json');
    writeFileSync(file, JSON.stringify({
      segments: [seg(0x1000000, [0, 0], 20 * 2 ** 20, 0), seg(0x3000000, [0, 3], 40 * 2 ** 20, 40 * 2 ** 20), seg(0x6000000, [0, 3], 2 * 2 ** 20, 0),
        seg(0x8000000, [5, 0], 2 * 2 ** 20, 2 ** 20)],
      device_traces: [[]],
    }));
    const lines = cca('segments', file).trim().split('\n');
    expect(lines.slice(-4)).toEqual([
      'reserved by pool:',
      '  device 0 (0, 0) default: 20.00 MiB reserved in 1 segment, 0 B allocated',
      '  device 0 (0, 3) MemPool or shared graph pool: 42.00 MiB reserved in 2 segments, 40.00 MiB allocated',
      "  device 0 (5, 0) CUDA graph's own pool: 2.00 MiB reserved in 1 segment, 1.00 MiB allocated",
    ]);
    expect(cca('segments', FIXTURE)).not.toContain('reserved by pool');
  });

  it('convert goes pickle -> JSON -> pickle and Python sees the original, frames shared again', () => {
    const json = join(dir, 'fixture.json');
    const back = join(dir, 'fixture.pickle');
    cca('convert', FIXTURE, json);
    cca('convert', json, back);
    const same = execFileSync('python3', ['-c', `
import pickle, sys
a = pickle.load(open(sys.argv[1], 'rb')); b = pickle.load(open(sys.argv[2], 'rb'))
print(a == b)`, FIXTURE, back], { encoding: 'utf8' }).trim();
    expect(same).toBe('True');  // tuples (pool ids) are tuples again after JSON
    // Equal frames and frame lists are stored once: no bigger than PyTorch's own file
    // (1.5 MB; 4.8 MB when every use had its copy).
    expect(statSync(back).size).toBeLessThanOrEqual(statSync(FIXTURE).size);
  });

  it('reads a snapshot from standard input as -, once', () => {
    const r = spawnSync(process.execPath, [CLI, 'summary', '-'], { input: readFileSync(FIXTURE), encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('device 0: 46 segments');
    const twice = spawnSync(process.execPath, [CLI, 'diff', '-', '-'], { input: readFileSync(FIXTURE), encoding: 'utf8' });
    expect(twice.status).not.toBe(0);
    expect(twice.stderr).toMatch(/standard input.*ERR_CCA_USAGE/);
    const big = spawnSync(process.execPath, [CLI, '--max-bytes', '1000', 'summary', '-'], { input: readFileSync(FIXTURE), encoding: 'utf8' });
    expect(big.stderr).toMatch(/ERR_CCA_FILE_TOO_LARGE/);
  });
});

describe('cca errors', () => {
  it('a corrupt file or a bad option is a one-line error with a code and exit 1', () => {
    const bad = join(dir, 'bad.pickle');
    writeFileSync(bad, Buffer.from([0x80, 0x04, 0x95, 0x01]));
    const r = spawnSync(process.execPath, [CLI, 'summary', bad], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^cca: corrupt or truncated pickle: .* \(ERR_CCA_CORRUPT_SNAPSHOT\)\n$/);
    const r2 = spawnSync(process.execPath, [CLI, 'trace', bad, '--limit', 'x'], { encoding: 'utf8' });
    expect(r2.status).not.toBe(0);
    expect(r2.stderr).toContain('--limit expects an integer');
  });
});
