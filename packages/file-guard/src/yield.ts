import { FileGuardError } from './errors.js';

/**
 * Cooperative scheduling for long synchronous walks: every `sliceMs` of work the walk
 * yields to the event loop (so timers, signals and other requests run) and checks the
 * caller's abort signal.
 */
export class Scheduler {
  private sliceStart = performance.now();

  constructor(
    private readonly abortSignal: AbortSignal | undefined,
    private readonly sliceMs = 20,
  ) {}

  /** Throws `ABORTED` when the signal fired. */
  checkAbort(): void {
    if (this.abortSignal?.aborted === true) {
      throw new FileGuardError('ABORTED', 'the operation was aborted', { cause: this.abortSignal.reason });
    }
  }

  /** Yield when the current slice is used up. */
  async maybeYield(): Promise<void> {
    if (performance.now() - this.sliceStart < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.sliceStart = performance.now();
    this.checkAbort();
  }
}
