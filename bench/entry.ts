/** Whether the module at `moduleUrl` is the script node was started with (not imported by a test). */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function isEntryPoint(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/**
 * Under `--expose-gc`, a full collection on SIGUSR2: the runner reads a proxy's memory after one
 * where what the open streams hold is measured, not the garbage a burst of requests left behind.
 */
export function collectOnSignal(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return;
  process.on('SIGUSR2', () => {
    gc();
    gc();
  });
}
