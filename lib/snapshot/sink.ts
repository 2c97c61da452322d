// Where encoded bytes go: a file written in chunks (bounded memory), or memory.
import { closeSync, openSync, writeSync } from 'node:fs';

export interface ByteSink {
  write(bytes: Uint8Array): void;
  close(): void;
  readonly bytesWritten: number;
}

export class FileSink implements ByteSink {
  #fd: number;
  bytesWritten = 0;
  constructor(path: string, private readonly onProgress?: (bytes: number) => void) {
    this.#fd = openSync(path, 'w');
  }
  write(bytes: Uint8Array): void {
    let off = 0;
    while (off < bytes.length) off += writeSync(this.#fd, bytes, off, bytes.length - off);
    this.bytesWritten += bytes.length;
    this.onProgress?.(this.bytesWritten);
  }
  close(): void {
    closeSync(this.#fd);
  }
}

export class MemorySink implements ByteSink {
  #chunks: Uint8Array[] = [];
  bytesWritten = 0;
  write(bytes: Uint8Array): void {
    this.#chunks.push(Uint8Array.from(bytes));
    this.bytesWritten += bytes.length;
  }
  close(): void {}
  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}
