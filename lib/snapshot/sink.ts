// Where encoded bytes go: a file (files.ts's replaceFile hands the writers one), or memory.
export interface ByteSink {
  write(bytes: Uint8Array): void;
  readonly bytesWritten: number;
}

export class MemorySink implements ByteSink {
  #chunks: Uint8Array[] = [];
  bytesWritten = 0;
  write(bytes: Uint8Array): void {
    this.#chunks.push(Uint8Array.from(bytes));
    this.bytesWritten += bytes.length;
  }
  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}
