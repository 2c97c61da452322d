// The project speaks of itself in things a reader can look up: a date, a commit, a benchmark
// command. Work-log labels ("session 16") cannot be, so none is kept in the tree.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LABEL = /\bsession[ -]?\d+|\bsession \d+'s\b/i;

describe('work-log labels', () => {
  it('appear in no tracked text file', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n')
      .filter((f) => /\.(ts|mts|mjs|cjs|js|cpp|h|md|json|yml|txt|sh|py|cmake)$/.test(f) || f === 'CMakeLists.txt');
    const found: string[] = [];
    for (const f of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, f), 'utf8');
      } catch {
        continue;  // listed but not in this checkout (a submodule's or a removed file)
      }
      text.split('\n').forEach((line, i) => {
        if (LABEL.test(line) && f !== 'test/contract/no-worklog-labels.test.ts') found.push(`${f}:${i + 1}: ${line.trim().slice(0, 100)}`);
      });
    }
    expect(found).toEqual([]);
  });
});
