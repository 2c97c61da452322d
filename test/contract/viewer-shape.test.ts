// The viewer's data shape is written twice: by lib/viewer/model.ts (a module, which builds it)
// and in lib/viewer/page-logic.ts (a script inlined into the page, which cannot import, so it
// declares what it reads). This holds the two together: TypeScript checks, with page-logic.ts
// read as the script it is, that both have the same fields at every level and that what the
// model writes is what the page reads.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const VIEWER = fileURLToPath(new URL('../../lib/viewer/', import.meta.url));

const CHECK = `
import type { ViewerData, ViewerDevice, ViewerPool, ViewerSegment } from './model.js';
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type PageSegment = RawDevice['segments'][number];
export const fields: [
  Same<keyof ViewerData, keyof ViewerInput>, Same<keyof ViewerDevice, keyof RawDevice>,
  Same<keyof ViewerPool, keyof RawPool>, Same<keyof ViewerSegment, keyof PageSegment>,
] = [true, true, true, true];
export const reads = (d: ViewerData, v: ViewerDevice, p: ViewerPool, s: ViewerSegment):
  [ViewerInput, RawDevice, RawPool, PageSegment] => [d, v, p, s];
`;

/** TypeScript's errors for the check, with page-logic.ts's text replaced by `pageLogic`. */
function shapeErrors(pageLogic?: string): string[] {
  const check = join(VIEWER, 'data-shape-check.ts');
  const page = join(VIEWER, 'page-logic.ts');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler,
    moduleDetection: ts.ModuleDetectionKind.Legacy, strict: true, noEmit: true, skipLibCheck: true,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.esnext.disposable.d.ts'], types: ['node'],
    typeRoots: [join(VIEWER, '../../node_modules/@types')],
  };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  const texts = new Map([[check, CHECK], ...(pageLogic === undefined ? [] : [[page, pageLogic] as const])]);
  host.readFile = (f) => texts.get(f) ?? read(f);
  const exists = host.fileExists.bind(host);
  host.fileExists = (f) => texts.has(f) || exists(f);
  const getSource = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lang, ...rest) => {
    const text = texts.get(f);
    return text === undefined ? getSource(f, lang, ...rest) : ts.createSourceFile(f, text, lang);
  };
  const program = ts.createProgram([page, check], options, host);
  return ts.getPreEmitDiagnostics(program)
    .filter((d) => d.file !== undefined && dirname(d.file.fileName) === dirname(check))
    .map((d) => `${d.file!.fileName.slice(VIEWER.length)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('the viewer\'s data, as the model writes it and the page reads it', () => {
  it('has the same fields at every level, of the types the page reads', () => {
    expect(shapeErrors()).toEqual([]);
  });

  it('fails when the page declares a field the model does not write, or another type', async () => {
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(join(VIEWER, 'page-logic.ts'), 'utf8');
    const extra = text.replace('interface RawPool {', 'interface RawPool {\n  colour: string;');
    expect(shapeErrors(extra).join('\n')).toMatch(/data-shape-check\.ts/);
    const retyped = text.replace(/(interface RawDevice \{\n\s+device: )number/, '$1string');
    expect(retyped).not.toBe(text);
    expect(shapeErrors(retyped).join('\n')).toMatch(/data-shape-check\.ts/);
  });
}, 60_000);
