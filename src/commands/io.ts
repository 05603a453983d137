/**
 * What a CLI command writes to and reads from: given to every command, so tests run them with
 * captured output and no process.
 */

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** Standard input, for interactive commands; absent when there is none. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  /** The clock (ms), for commands that read time (`llmux usage`); default Date.now. */
  now?: () => number;
}
