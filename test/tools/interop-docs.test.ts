// docs/interop.md's C code: every ```c block compiles (C99, warnings as errors) against the
// packaged cca.h, so the adapters a user copies are real code.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { interop } from '../../lib/index.js';
import { tempDir } from '../support/temp-dir.js';

const doc = readFileSync(new URL('../../docs/interop.md', import.meta.url), 'utf8');
const blocks = [...doc.matchAll(/```c\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('docs/interop.md', () => {
  it('has the C ABI snippet and both adapters', () => {
    expect(blocks.length).toBe(3);
  });
  it.each(blocks.map((b, i) => [i, b] as const))('C block %i compiles against cca.h', (i, code) => {
    const dir = tempDir('cca-doc-c-');
    const file = join(dir, `block${i}.c`);
    // The first block's fprintf needs stdio; the doc leaves includes a user has anyway out.
    writeFileSync(file, `#include <stdio.h>\n#include <stdint.h>\n${code}`);
    execFileSync(process.env.CC || 'cc', ['-std=c99', '-D_POSIX_C_SOURCE=200809L', '-Wall', '-Wextra', '-Werror', '-c',
      `-I${interop.includeDir}`, file, '-o', join(dir, `block${i}.o`)], { stdio: 'pipe' });
  });
});
