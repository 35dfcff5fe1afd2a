/**
 * Bounded capture of one output stream: the first `headBytes` and the last `tailBytes` are
 * kept, everything is counted. Memory stays bounded whatever the student prints.
 */
export class OutputCapture {
  private readonly head: Buffer[] = [];
  private headLength = 0;
  private tail: Buffer = Buffer.alloc(0);
  private total = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    let rest = chunk;
    if (this.headLength < this.headBytes) {
      const take = Math.min(this.headBytes - this.headLength, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headLength += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailBytes === 0) return;
    if (rest.length >= this.tailBytes) {
      this.tail = Buffer.from(rest.subarray(rest.length - this.tailBytes));
    } else {
      const joined = Buffer.concat([this.tail, rest]);
      this.tail =
        joined.length > this.tailBytes
          ? Buffer.from(joined.subarray(joined.length - this.tailBytes))
          : joined;
    }
  }

  /** Bytes seen in all. */
  get totalBytes(): number {
    return this.total;
  }

  /** True when some bytes between head and tail were dropped. */
  get truncated(): boolean {
    return this.total > this.headLength + this.tail.length;
  }

  /** The kept text; a dropped middle is replaced by one marked line naming how much was dropped. */
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    if (this.tail.length === 0) return head;
    const dropped = this.total - this.headLength - this.tail.length;
    if (dropped <= 0) return head + this.tail.toString('utf8');
    return `${head}\n[… ${dropped} bytes of output truncated …]\n${this.tail.toString('utf8')}`;
  }
}

/**
 * Finds an end-of-output token in a stream split into arbitrary chunks. Until the token is
 * known, everything is output; once armed, up to `token.length - 1` bytes are held back so a
 * token split across chunks is still found. Bytes after the token belong to whatever comes
 * next (background jobs writing after the command ended).
 */
export class TokenScanner {
  private token: Buffer | undefined;
  private held: Buffer = Buffer.alloc(0);
  found = false;

  arm(token: string): void {
    this.token = Buffer.from(token);
    this.held = Buffer.alloc(0);
    this.found = false;
  }

  disarm(): Buffer {
    const held = this.held;
    this.token = undefined;
    this.held = Buffer.alloc(0);
    this.found = false;
    return held;
  }

  /** Split `chunk` into output before the token and bytes after it (when the token ends here). */
  feed(chunk: Buffer): { output: Buffer; after: Buffer | undefined } {
    const token = this.token;
    if (token === undefined || this.found) return { output: chunk, after: undefined };
    const buffer = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const index = buffer.indexOf(token);
    if (index >= 0) {
      this.found = true;
      this.held = Buffer.alloc(0);
      return { output: buffer.subarray(0, index), after: buffer.subarray(index + token.length) };
    }
    const keep = Math.min(token.length - 1, buffer.length);
    this.held = Buffer.from(buffer.subarray(buffer.length - keep));
    return { output: buffer.subarray(0, buffer.length - keep), after: undefined };
  }
}
