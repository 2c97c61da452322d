// CommonJS users: `require('cuda-caching-allocator')` loads the same ES module that `import`
// does (Node's require(esm), on by default from Node 20.19 and 22.12), so a process that
// loads it both ways has one allocator and one JS state. The types accept both forms under
// `tsc --strict --module nodenext`. Run from a project that has the package in node_modules.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');

function project(): string {
  const dir = tempDir('cca-cjs-');
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'cuda-caching-allocator'), 'dir');
  return dir;
}

describe('CommonJS', () => {
  it('require and import in one process give one module and one allocator state', () => {
    const dir = project();
    writeFileSync(join(dir, 'both.cjs'), `
      const cjs = require('cuda-caching-allocator');
      import('cuda-caching-allocator').then((esm) => {
        const b = cjs.cuda.alloc(4096);
        esm.memory._record_memory_history({ enabled: 'all', context: 'all' });
        const c = cjs.cuda.alloc(1024, { tag: 'from-require' });
        const s = esm.memory._snapshot();
        const out = {
          same: cjs === esm && cjs.memory === esm.memory,
          allocated: esm.memory.memory_allocated(),
          traced: s.device_traces[0].filter((e) => e.user_metadata === 'from-require' && e.frames.length > 0).length,
          errorClass: (() => { try { cjs.cuda.alloc(-1); } catch (e) { return e instanceof esm.ArgumentRangeError; } })(),
        };
        b.free(); c.free();
        console.log(JSON.stringify(out));
      });`);
    const out = JSON.parse(execFileSync(process.execPath, ['both.cjs'], { cwd: dir, encoding: 'utf8' }).trim());
    expect(out).toEqual({ same: true, allocated: 4096 + 1024, traced: 1, errorClass: true });
  });

  it('type-checks from .cts and .mts under --strict --module nodenext', () => {
    const dir = project();
    writeFileSync(join(dir, 'use.cts'), `import cca = require('cuda-caching-allocator');
const b: cca.DeviceBuffer = cca.cuda.alloc(4096);
const n: number = cca.memory.memory_allocated();
b.free();
console.log(n);
`);
    writeFileSync(join(dir, 'use.mts'), `import { cuda, memory, type DeviceBuffer } from 'cuda-caching-allocator';
const b: DeviceBuffer = cuda.alloc(4096);
console.log(memory.memory_allocated());
b.free();
`);
    writeFileSync(join(dir, 'wrong.cts'), `import cca = require('cuda-caching-allocator');
cca.cuda.alloc('4096');
`);
    const config = (files: string[]) => JSON.stringify({
      compilerOptions: {
        strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true,
        types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')],
      },
      files,
    });
    writeFileSync(join(dir, 'tsconfig.json'), config(['use.cts', 'use.mts']));
    execFileSync(TSC, ['-p', dir], { encoding: 'utf8' });
    // And the types still catch a mistake from CommonJS.
    writeFileSync(join(dir, 'tsconfig.json'), config(['wrong.cts']));
    let report = '';
    try {
      execFileSync(TSC, ['-p', dir], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      report = String((e as { stdout?: string }).stdout);
    }
    expect(report).toMatch(/wrong\.cts\(2,\d+\): error TS2345: .* not assignable to parameter of type 'number'/);
  });
});
