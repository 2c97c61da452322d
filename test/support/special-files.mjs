// Files that are not regular files, for the tests that hand them to the reader, the
// writers and every cca command: each must be refused at once with ERR_CCA_NOT_A_FILE, and
// none may block (open() on a FIFO with no writer waits forever; /dev/zero never ends).
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * Makes, under `dir`, a FIFO with no writer, a listening Unix socket, a directory and
 * symbolic links to the FIFO and to /dev/zero, and names the devices every Linux has.
 * Resolves to { paths: { label: path }, close() } (close stops the socket's server).
 */
export async function specialFiles(dir) {
  mkdirSync(dir, { recursive: true });
  const fifo = join(dir, 'a.fifo');
  execFileSync('mkfifo', [fifo]);
  const socket = join(dir, 'a.sock');
  const server = createServer();
  await new Promise((resolve, reject) => server.once('error', reject).listen(socket, resolve));
  const folder = join(dir, 'folder.pickle');
  mkdirSync(folder);
  const fifoLink = join(dir, 'fifo-link.pickle');
  symlinkSync(fifo, fifoLink);
  const zeroLink = join(dir, 'zero-link.json');
  symlinkSync('/dev/zero', zeroLink);
  return {
    paths: { fifo, socket, folder, 'fifo-link': fifoLink, 'zero-link': zeroLink, 'dev-zero': '/dev/zero', 'dev-null': '/dev/null', 'dev-stdin': '/dev/stdin' },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
