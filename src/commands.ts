/**
 * The registry of CLI commands that feature modules add (device, setup), so the CLI does not
 * import them directly and they don't import the CLI.
 */

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** Standard input, for interactive commands; absent when there is none. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
}

/** Runs a command with its arguments; resolves with the exit code. */
export type CommandHandler = (args: string[], io: CliIo) => Promise<number>;

const commands = new Map<string, CommandHandler>();

export function registerCommand(name: string, handler: CommandHandler): void {
  commands.set(name, handler);
}

export function findCommand(name: string): CommandHandler | undefined {
  return commands.get(name);
}
