/**
 * The command table's machinery: a command is described once (name, summary, usage line, options
 * with their kind, description and default, an example, its handler) and its parsing, its
 * `--help`, `llmux --help` and its usage errors are all derived from that description.
 *
 * Decisions:
 * - A usage error is two lines on stderr: `llmux: COMMAND: what is wrong` naming the flag or the
 *   argument, then where the help is; exit 2. A command's own checks throw `UsageError` for the same.
 * - An option's value is the next argument whatever it looks like (`--rpm -5` reads "-5" and
 *   refuses it as a number, instead of node:util's "ambiguous" advice), except an option of the
 *   same command (`--name --admin`: `--name` lacks a value).
 * - `-h` / `--help` anywhere before `--` shows the help, even beside bad flags.
 * - A repeated option keeps its last value, unless it is `multiple`.
 */
import type { CliIo } from './io.ts';

/** What an option's value is; the parser checks it and hands the handler the typed value. */
export type OptionKind =
  /** No value: present or not. */
  | 'flag'
  /** Any text. */
  | 'text'
  /** A whole number >= 1. */
  | 'whole'
  /** A TCP port, 0-65535 (0: a free one). */
  | 'port'
  /** US dollars >= 0, like 25 or 2.50. */
  | 'usd'
  /** One of `choices`. */
  | 'choice'
  /** Items separated by commas, at least one. */
  | 'list';

export interface OptionSpec {
  /** The long name without dashes (`rpm`); with `family`, the name shown in help (`NAME-key-env`). */
  name: string;
  kind: OptionKind;
  /** What the value is called in usage and help (`N`, `FILE`); flags have none. */
  value?: string;
  /** A one-letter alias (`y` for `-y`). */
  short?: string;
  choices?: readonly string[];
  description: string;
  /** The value taken when the option is not given, parsed as if given; shown in help. */
  default?: string;
  /** A default that is not a literal value (`~/.llmux`), shown in help only. */
  defaultNote?: string;
  /** May be given more than once; the handler reads every value with `all`. */
  multiple?: boolean;
  /** Refused when missing. */
  required?: boolean;
  /** The concrete long names an option stands for (`openai-key-env`, `anthropic-key-env`, …). */
  family?: readonly string[];
}

export interface ArgumentSpec {
  /** As shown: `USER_CODE`, `ID|NAME`. */
  name: string;
  description: string;
}

/** What a handler receives: typed option values and the positional arguments. */
export interface ParsedArgs {
  readonly positionals: readonly string[];
  /** Whether the option was on the command line (a default does not count). */
  given(name: string): boolean;
  /** A text or choice option's value (the last one given, or its default). */
  text(name: string): string | undefined;
  /** A whole, port or usd option's value. */
  number(name: string): number | undefined;
  flag(name: string): boolean;
  /** A list option's items. */
  list(name: string): string[] | undefined;
  /** Every value of a `multiple` option, in order. */
  all(name: string): string[];
}

export type Handler = (args: ParsedArgs, io: CliIo) => Promise<number>;

export interface CommandSpec {
  /** The words after `llmux`: `['keys', 'create']`. */
  path: readonly string[];
  summary: string;
  /** The usage line, from `llmux` on; every option of the command appears in it (a test checks). */
  usage: string;
  options: readonly OptionSpec[];
  args?: readonly ArgumentSpec[];
  /** Lines of help after the options: what the environment or the exit codes add. */
  notes?: string;
  example: string;
  run: Handler;
}

/** A problem with how a command was called; exit 2 with one line naming it. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const HELP_OPTION: OptionSpec = { name: 'help', short: 'h', kind: 'flag', description: 'show this help' };

const VALUE_OF: Record<Exclude<OptionKind, 'flag'>, (text: string, option: OptionSpec) => string | number | string[]> = {
  text: (text) => text,
  whole(text, option) {
    const n = Number(text);
    if (text.trim() === '' || !Number.isInteger(n) || n < 1) throw new UsageError(`${flagOf(option)}: "${text}" must be a whole number >= 1`);
    return n;
  },
  port(text, option) {
    const n = Number(text);
    if (text.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${flagOf(option)}: "${text}" is not a port number (0-65535)`);
    return n;
  },
  usd(text, option) {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`${flagOf(option)}: "${text}" must be an amount of US dollars >= 0, like 25 or 2.50`);
    return n;
  },
  choice(text, option) {
    const choices = option.choices ?? [];
    if (!choices.includes(text)) throw new UsageError(`${flagOf(option)}: "${text}" must be ${orList(choices)}`);
    return text;
  },
  list(text, option) {
    const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '');
    if (items.length === 0) throw new UsageError(`${flagOf(option)}: "${text}" must name at least one, separated by commas`);
    return items;
  },
};

function flagOf(option: OptionSpec): string {
  return `--${option.name}`;
}

/** `a, b or c`. */
export function orList(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1] as string}`;
}

/** Whether `args` (before a `--`) ask for help. */
export function asksForHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/** Parses `args` against `spec`; throws UsageError naming the first problem. */
export function parseCommandArgs(spec: CommandSpec, args: readonly string[]): ParsedArgs {
  const byLong = new Map<string, OptionSpec>();
  const byShort = new Map<string, OptionSpec>();
  for (const option of [...spec.options, HELP_OPTION]) {
    for (const name of option.family ?? [option.name]) byLong.set(name, option);
    if (option.short !== undefined) byShort.set(option.short, option);
  }
  const raw = new Map<string, string[]>();
  const seen = new Map<string, OptionSpec>();
  const positionals: string[] = [];
  const isOption = (arg: string): boolean => arg.startsWith('--') ? byLong.has(arg.slice(2).split('=')[0] as string) : arg.length === 2 && byShort.has(arg.slice(1));

  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const long = arg.startsWith('--');
    const eq = long ? arg.indexOf('=') : -1;
    const name = long ? arg.slice(2, eq === -1 ? undefined : eq) : arg.slice(1);
    const option = long ? byLong.get(name) : byShort.get(name);
    if (option === undefined) throw new UsageError(`unknown option ${long ? `--${name}` : arg}`);
    const shown = long ? `--${name}` : arg;
    let value: string;
    if (option.kind === 'flag') {
      if (eq !== -1) throw new UsageError(`${shown} takes no value`);
      value = '';
    } else if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      const next = args[i + 1];
      if (next === undefined || isOption(next)) throw new UsageError(`${shown} needs a value (${option.value ?? 'VALUE'})`);
      value = next;
      i++;
    }
    // Kept under the long name: `-y` is `--yes`; a family's member under its own name.
    const key = long ? name : option.name;
    const list = raw.get(key) ?? [];
    list.push(value);
    raw.set(key, list);
    seen.set(key, option);
  }

  // Check every value now, so a handler never starts with a bad one.
  const values = new Map<string, string | number | string[]>();
  for (const [name, given] of raw) {
    const option = seen.get(name) as OptionSpec;
    if (option.kind === 'flag') continue;
    const named = { ...option, name };
    for (const text of given) values.set(name, VALUE_OF[option.kind](text, named));
  }
  for (const option of spec.options) {
    if (option.family !== undefined) continue;
    if (!raw.has(option.name) && option.default !== undefined && option.kind !== 'flag') values.set(option.name, VALUE_OF[option.kind](option.default, option));
    if (option.required === true && !raw.has(option.name)) throw new UsageError(`${flagOf(option)} ${option.value ?? ''} is required: ${option.description}`.replace(/ +:/, ':'));
  }

  const wanted = spec.args ?? [];
  if (positionals.length < wanted.length) throw new UsageError(`missing ${(wanted[positionals.length] as ArgumentSpec).name}: ${(wanted[positionals.length] as ArgumentSpec).description}`);
  if (positionals.length > wanted.length) throw new UsageError(`unexpected argument "${positionals[wanted.length] as string}"${wanted.length === 0 ? ' (this command takes none)' : ''}`);

  const known = (name: string): void => {
    if (!byLong.has(name)) throw new Error(`${spec.path.join(' ')} has no option --${name}`);
  };
  const typed = <T>(name: string, check: (v: unknown) => v is T): T | undefined => {
    known(name);
    const value = values.get(name);
    return check(value) ? value : undefined;
  };
  return {
    positionals,
    given: (name) => {
      known(name);
      return raw.has(name);
    },
    text: (name) => typed(name, (v): v is string => typeof v === 'string'),
    number: (name) => typed(name, (v): v is number => typeof v === 'number'),
    flag: (name) => {
      known(name);
      return raw.has(name);
    },
    list: (name) => typed(name, (v): v is string[] => Array.isArray(v)),
    all: (name) => {
      known(name);
      return [...(raw.get(name) ?? [])];
    },
  };
}

/** A usage line shown after `width` characters: its continuation lines moved right by as much. */
export function indentUsage(usage: string, width: number): string {
  return usage.split('\n').join(`\n${' '.repeat(width)}`);
}

/** The left column of an option in help: `-y, --yes`, `--rpm N`, `--tier basic|pro|enterprise`. */
function optionLabel(option: OptionSpec): string {
  const value = option.kind === 'flag' ? '' : ` ${option.value ?? (option.choices ?? []).join('|')}`;
  return `${option.short === undefined ? '' : `-${option.short}, `}--${option.name}${value}`;
}

/** The help of one command: usage, what it does, arguments, options, notes, an example. */
export function commandHelp(spec: CommandSpec): string {
  const rows: Array<[string, string]> = [];
  for (const arg of spec.args ?? []) rows.push([arg.name, arg.description]);
  for (const option of [...spec.options, HELP_OPTION]) {
    const dflt = option.default ?? option.defaultNote;
    rows.push([optionLabel(option), `${option.description}${dflt === undefined ? '' : ` (default ${dflt})`}`]);
  }
  const width = Math.min(30, Math.max(...rows.map(([label]) => label.length)));
  const lines = rows.map(([label, text]) => (label.length > width ? `  ${label}\n  ${' '.repeat(width)}  ${text}` : `  ${label.padEnd(width)}  ${text}`));
  return `usage: ${indentUsage(spec.usage, 7)}\n\n${spec.summary}\n\n${spec.args === undefined || spec.args.length === 0 ? 'Options' : 'Arguments and options'}:\n${lines.join('\n')}\n`
    + `${spec.notes === undefined ? '' : `\n${spec.notes.trimEnd()}\n`}`
    + `\nExample:\n${spec.example.split('\n').map((line) => `  ${line}`).join('\n')}\n`;
}

/** The help of a command group (`llmux keys`): its subcommands' usage lines and summaries. */
export function groupHelp(group: string, commands: readonly CommandSpec[]): string {
  const lines = commands.map((c) => `  ${indentUsage(c.usage, 2)}\n      ${c.summary}`);
  return `usage: llmux ${group} ${commands.map((c) => c.path[c.path.length - 1]).join('|')} …\n\n${lines.join('\n')}\n\nRun "llmux ${group} COMMAND --help" for a command's options and an example.\n`;
}

/** Writes a usage error: the problem on one line, then where the help is. Returns exit code 2. */
export function usageFailure(io: CliIo, path: readonly string[], message: string): number {
  const where = path.length === 0 ? '' : `${path.join(' ')}: `;
  io.stderr(`llmux: ${where}${message}\nRun "llmux ${path.length === 0 ? '' : `${path.join(' ')} `}--help" for usage.\n`);
  return 2;
}
