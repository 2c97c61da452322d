// No function in lib/ past 150 lines (docs/architecture.md, "lib/'s floors"): a function that
// long holds several ideas, and the next feature lands in it. Every function-like node with a
// body (declarations, methods, arrows, function expressions) is measured with TypeScript's
// parser, first line to last.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const LIB = fileURLToPath(new URL('../../lib', import.meta.url));
const MAX_LINES = 150;

function libFiles(dir = LIB): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return libFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** Each function of `text` as [name, first line, lines]. */
export function functionLengths(file: string, text: string): [string, number, number][] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out: [string, number, number][] = [];
  const visit = (n: ts.Node) => {
    if (ts.isFunctionLike(n) && 'body' in n && n.body) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(n.end).line;
      const named = (n as ts.FunctionLikeDeclaration).name;
      const name = named ? named.getText(sf) : ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(sf) : '(anonymous)';
      out.push([name, first + 1, last - first + 1]);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

describe('lib/\'s functions stay small', () => {
  it(`none is longer than ${MAX_LINES} lines`, () => {
    const long = libFiles().flatMap((f) => functionLengths(f, readFileSync(f, 'utf8'))
      .filter(([, , lines]) => lines > MAX_LINES)
      .map(([name, line, lines]) => `${relative(LIB, f)}:${line} ${name} (${lines} lines)`));
    expect(long).toEqual([]);
  });

  it('measures what it should: a long arrow, method and declaration are each caught', () => {
    const body = Array.from({ length: 160 }, (_, i) => `  x += ${i};`).join('\n');
    const text = `function f() {\n${body}\n}\nconst g = () => {\n${body}\n};\nclass C { m() {\n${body}\n} }\n`;
    expect(functionLengths('x.ts', text).map(([name, , lines]) => [name, lines])).toEqual([['f', 162], ['g', 162], ['m', 162]]);
  });
});
