// lib/'s walls, as test/native/layers.cmake holds native/'s: every file parsed with
// TypeScript's own parser, each import (runtime or type-only, import or re-export) resolved
// to a file, and the floor table of docs/architecture.md ("lib/'s floors") applied: no import
// to a higher floor, and no cycle among files. The table is read from the doc, so the two
// cannot drift.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIB = join(ROOT, 'lib');

/** Upward imports allowed for now (none). A wall broken on purpose is listed here exactly, so
 *  it shows in review, and the test fails once it is mended without the list shrinking. */
const KNOWN_UPWARD: string[] = [];

/** File circles allowed for now (none): the same rule. */
const KNOWN_CYCLES: string[][] = [];

interface Floor {
  name: string;
  paths: string[];
  rest: boolean;
}

/** The floors, lowest first, from the doc's table: paths in backticks; "every root file not
 *  named above" marks the floor that takes the root files no row names. */
export function readFloors(doc: string): Floor[] {
  const section = doc.slice(doc.indexOf("## lib/'s floors"));
  const rows = [...section.matchAll(/^\| (\d+) (\w+) \| ([^|]+) \|/gm)];
  return rows.map((m) => ({
    name: m[2]!,
    paths: [...m[3]!.matchAll(/`([^`]+)`/g)].map((p) => p[1]!),
    rest: /every root file not named above/.test(m[3]!),
  }));
}

export function floorOf(floors: Floor[], file: string): number {
  for (let i = 0; i < floors.length; i++) {
    if (floors[i]!.paths.some((p) => (p.endsWith('/') ? file.startsWith(p) : file === p))) return i;
  }
  const rest = floors.findIndex((f) => f.rest);
  return !file.includes('/') && rest >= 0 ? rest : -1;
}

function libFiles(dir = LIB): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return libFiles(p);
    return p.endsWith('.ts') ? [relative(LIB, p)] : [];
  });
}

/** Every relative import and re-export of a file, resolved to a lib/ path (others dropped). */
export function importsOf(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false);
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    let spec: ts.Expression | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) spec = node.moduleSpecifier;
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) spec = node.arguments[0];
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) spec = node.argument.literal;
    if (spec && ts.isStringLiteral(spec) && spec.text.startsWith('.')) {
      const target = relative(LIB, resolve(dirname(join(LIB, file)), spec.text.replace(/\.js$/, '.ts')));
      if (!target.startsWith('..')) out.push(target);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Strongly connected groups of more than one file (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return out;
}

const floors = readFloors(readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8'));
const graph = new Map(libFiles().map((f) => [f, importsOf(f, readFileSync(join(LIB, f), 'utf8'))]));

function upward(g: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [f, targets] of g) for (const t of targets) if (floorOf(floors, t) > floorOf(floors, f)) out.push(`${f} -> ${t}`);
  return [...new Set(out)].sort();
}

describe('lib/ is layered', () => {
  it('the doc\'s table names eight floors and puts every file on one', () => {
    expect(floors.map((f) => f.name)).toEqual(['base', 'format', 'analysis', 'addon', 'live', 'replay', 'viewer', 'entry']);
    const lost = [...graph.keys()].filter((f) => floorOf(floors, f) < 0);
    expect(lost).toEqual([]);
  });

  it('no file imports from a higher floor (but the known exception, listed exactly)', () => {
    expect(upward(graph)).toEqual(KNOWN_UPWARD);
  });

  it('no files import each other in a circle (but the known ones, listed exactly)', () => {
    const sort = (cs: string[][]) => cs.map((c) => c.join(' ')).sort();
    expect(sort(cycles(graph))).toEqual(sort(KNOWN_CYCLES));
  });

  it('fails when an upward import or a cycle is added', () => {
    const broken = new Map(graph);
    broken.set('errors.ts', [...graph.get('errors.ts')!, 'memory.ts']);  // base -> live
    expect(upward(broken)).toContain('errors.ts -> memory.ts');
    const circle = new Map(graph);
    circle.set('history/record.ts', [...graph.get('history/record.ts')!, 'history/annotations.ts']);
    expect(cycles(circle)).toContainEqual(['history/annotations.ts', 'history/record.ts']);
    // Type-only imports and import() types count too.
    expect(importsOf('snapshot/x.ts', "import type { A } from '../memory.js';\nlet b: import('../cuda.js').B;")).toEqual(['memory.ts', 'cuda.ts']);
  });
});
