import process from 'node:process';

/** An AbortSignal that fires on SIGINT or SIGTERM, until `dispose()`. */
export interface Termination {
  readonly signal: AbortSignal;
  dispose(): void;
}

/**
 * Listen for SIGINT and SIGTERM so a long command stops and tears its sandboxes down instead
 * of dying with them alive. `onSignal` is told which signal arrived.
 */
export function listenForTermination(onSignal?: (signal: NodeJS.Signals) => void): Termination {
  const controller = new AbortController();
  const handler = (signal: NodeJS.Signals): void => {
    onSignal?.(signal);
    controller.abort();
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
