// The current memory metadata (PyTorch's _set_memory_metadata / _get_memory_metadata): a
// label that every allocation this JS environment makes carries as `user_metadata`, in
// snapshots and trace entries, until it is changed. PyTorch keeps it per thread; a JS
// environment is one thread, so it is a module variable here, and a worker has its own.
//
// withMemoryMetadata(label, fn) is the scoped form. Scopes may overlap when async
// functions interleave: the label in force is the newest scope still open, else the one
// _set_memory_metadata set. A scope that ends takes only itself away, whatever order the
// scopes end in, so an early-ending scope never clears a later one's label.
import { runScoped } from '../scoped.js';
import { checkString, typeError } from '../validate.js';
import { tags } from './stack-store.js';

let base = '';
const open: { label: string }[] = [];

/** What cuda.alloc reads on its hot path: the label in force, as a tag id (0: none). */
export const currentMetadata = { tagId: 0 };

function update(): void {
  const label = open.length > 0 ? open[open.length - 1]!.label : base;
  currentMetadata.tagId = label === '' ? 0 : tags.id(label);
}

/**
 * Sets the label that later allocations of this JS environment carry as `user_metadata`
 * (in snapshots, trace entries, `cca diff`'s per-tag table, the viewer's search), until
 * changed; '' for none. An allocation's own `tag` option wins. withMemoryMetadata is the
 * scoped form.
 */
export function _set_memory_metadata(metadata: string): void {
  base = checkString('metadata', metadata);
  update();
}

/** The label in force: the newest open withMemoryMetadata scope's, else _set_memory_metadata's ('' by default). */
export function _get_memory_metadata(): string {
  return open.length > 0 ? open[open.length - 1]!.label : base;
}

/**
 * Runs `fn` with `metadata` as the label in force and returns fn's result; an async fn
 * keeps it until its promise settles (other work that allocates meanwhile carries it too,
 * as PyTorch's thread-local label would).
 */
export function withMemoryMetadata<T>(metadata: string, fn: () => T): T {
  checkString('metadata', metadata);
  if (typeof fn !== 'function') throw typeError('a function', 'fn', fn);
  const scope = { label: metadata };
  open.push(scope);
  update();
  return runScoped(fn, () => {
    open.splice(open.lastIndexOf(scope), 1);
    update();
  });
}

/** @internal Tests: back to no label and no scopes. */
export function resetMemoryMetadata(): void {
  base = '';
  open.length = 0;
  update();
}
