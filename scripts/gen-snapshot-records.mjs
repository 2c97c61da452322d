// Writes lib/snapshot/records.generated.ts from native/binding/snapshot_records.h: each
// record's field names in order, and a const enum of their offsets that tsc compiles to
// plain numbers (the decoder's loops index with literals). `--check` writes nothing and
// exits 1 when the file differs from what the header gives (test/api/snapshot-layout.test.ts
// runs it). Usage: node scripts/gen-snapshot-records.mjs [--check]
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('..', import.meta.url);
const header = readFileSync(new URL('native/binding/snapshot_records.h', root), 'utf8');
const target = new URL('lib/snapshot/records.generated.ts', root);

/** The X(name, ...) fields of one `#define MACRO(X)` list, in order. */
export function fieldsOf(text, macro) {
  const start = text.indexOf(`#define ${macro}(X)`);
  if (start < 0) throw new Error(`${macro} not found in snapshot_records.h`);
  const lines = [];
  for (const line of text.slice(start).split('\n').slice(1)) {
    const m = /^\s*X\((\w+),/.exec(line);
    if (!m) break;
    lines.push(m[1]);
  }
  if (lines.length === 0) throw new Error(`${macro} lists no field`);
  return lines;
}

export function generate(text) {
  const kinds = [
    ['SEGMENT', 'Seg', 'CCA_SEGMENT_RECORD'],
    ['BLOCK', 'Blk', 'CCA_BLOCK_RECORD'],
    ['TRACE', 'Trc', 'CCA_TRACE_RECORD'],
  ];
  let out = '// Generated from native/binding/snapshot_records.h by scripts/gen-snapshot-records.mjs: do not\n' +
    '// edit; run `node scripts/gen-snapshot-records.mjs` after changing the header.\n';
  for (const [upper, enumName, macro] of kinds) {
    const fields = fieldsOf(text, macro);
    out += `\nexport const ${upper}_FIELDS = [${fields.map((f) => `'${f}'`).join(', ')}] as const;\n`;
    out += `export const enum ${enumName} {\n${fields.map((f, i) => `  ${f} = ${i},\n`).join('')}  width = ${fields.length},\n}\n`;
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generate(header);
  if (process.argv.includes('--check')) {
    const current = readFileSync(target, 'utf8');
    if (current !== text) {
      console.error('lib/snapshot/records.generated.ts differs from native/binding/snapshot_records.h: run node scripts/gen-snapshot-records.mjs');
      process.exit(1);
    }
  } else {
    writeFileSync(target, text);
  }
}
