/**
 * What the documentation tests read out of Markdown: the user docs (README.md and docs/*.md), their
 * fenced blocks, headings as GitHub anchors them, links, and the shell commands of a script.
 *
 * The shell reading is deliberately small: enough of sh to find each simple command of the docs'
 * examples (quotes, `\` continuations, comments, `&&` `||` `|` `;` `&`, redirections, `VAR=value`
 * prefixes, and `$(…)`, whose commands are read too), not a shell.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

/** The user documentation: README.md, then docs/*.md, as paths relative to the checkout. */
export function docFiles(): string[] {
  const pages = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort();
  return ['README.md', ...pages.map((name) => `docs/${name}`)];
}

export const readDoc = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

export interface FencedBlock {
  /** The info string's first word (`sh`, `json`), or '' for a bare fence. */
  lang: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)/;

/** Splits Markdown into its fenced blocks and the prose lines outside them (fenced lines blanked). */
function scan(markdown: string): { blocks: FencedBlock[]; prose: string[] } {
  const blocks: FencedBlock[] = [];
  const prose: string[] = [];
  const lines = markdown.split('\n');
  let open: { fence: string; indent: number; lang: string; line: number; body: string[] } | undefined;
  lines.forEach((text, index) => {
    const match = FENCE.exec(text);
    if (open === undefined) {
      if (match !== null) {
        open = { fence: match[2] as string, indent: (match[1] as string).length, lang: match[3] ?? '', line: index + 1, body: [] };
        prose.push('');
      } else prose.push(text);
      return;
    }
    prose.push('');
    if (match !== null && (match[2] as string).startsWith(open.fence) && match[3] === '') {
      blocks.push({ lang: open.lang, body: open.body.join('\n'), line: open.line });
      open = undefined;
      return;
    }
    // A fence inside a list item is indented: its lines lose that indent.
    open.body.push(text.startsWith(' '.repeat(open.indent)) ? text.slice(open.indent) : text.trimStart());
  });
  return { blocks, prose };
}

export const fencedBlocks = (markdown: string): FencedBlock[] => scan(markdown).blocks;

/** The body of the first `lang` block after the line that holds `heading` in a user doc, if there is one. */
export function blockUnder(file: string, heading: string, lang: string): string | undefined {
  const markdown = readDoc(file);
  const at = markdown.indexOf(heading);
  if (at === -1) return undefined;
  const headingLine = markdown.slice(0, at).split('\n').length;
  return fencedBlocks(markdown).find((block) => block.lang === lang && block.line > headingLine)?.body;
}

/** Inline code spans, which hold text rather than links or headings' markup. */
const CODE_SPAN = /(`+)([\s\S]*?[^`])\1(?!`)/g;

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(CODE_SPAN, (_m, _ticks, code: string) => code)
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[*]/g, '');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page offers: its headings' slugs, a repeated one suffixed `-1`, `-2`, … as GitHub does. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of scan(markdown).prose) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const base = slug(heading[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** The targets of the inline links `[text](target)` outside code. */
export function links(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of scan(markdown).prose) {
    const text = line.replace(CODE_SPAN, 'code');
    for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) targets.push(match[1] as string);
  }
  return targets;
}

/**
 * The simple commands of a shell script, each as its words (quotes removed, `VAR=value` prefixes
 * dropped); a `$(…)` stands as `$(…)` in its word and its own commands are listed too.
 */
export function shellCommands(script: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | undefined;
  let redirect = false;
  const endWord = (): void => {
    if (word === undefined) return;
    if (redirect) redirect = false;
    else words.push(word);
    word = undefined;
  };
  const endCommand = (): void => {
    endWord();
    while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0] as string)) words.shift();
    if (words.length > 0) commands.push(words);
    words = [];
  };
  /** The text of a `$(…)` starting at `from` (just after its `(`), and where it ends. */
  const substitution = (from: number): { inner: string; end: number } => {
    let depth = 1;
    let quote: string | undefined;
    for (let i = from; i < text.length; i += 1) {
      const c = text[i] as string;
      if (quote !== undefined) {
        if (c === quote) quote = undefined;
      } else if (c === '\'' || c === '"') quote = c;
      else if (c === '(') depth += 1;
      else if (c === ')' && (depth -= 1) === 0) return { inner: text.slice(from, i), end: i };
    }
    throw new Error(`unclosed $( in: ${script}`);
  };
  const text = script.replace(/\\\n/g, ' ');
  let quote: string | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '$' && next === '(' && quote !== '\'') {
      const { inner, end } = substitution(i + 2);
      commands.push(...shellCommands(inner));
      word = `${word ?? ''}$(…)`;
      i = end;
    } else if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else word = `${word ?? ''}${c}`;
    } else if (c === '\'' || c === '"') {
      quote = c;
      word = word ?? '';
    } else if (c === '#' && word === undefined) {
      while (i < text.length && text[i] !== '\n') i += 1;
      endCommand();
    } else if (c === '\n' || c === ';' || c === '&' || c === '|') {
      if ((c === '&' || c === '|') && next === c) i += 1;
      endCommand();
    } else if (c === '>' || c === '<') {
      if (word !== undefined && /^\d+$/.test(word)) word = undefined;
      endWord();
      if (next === '>') i += 1;
      redirect = true;
    } else if (c === ' ' || c === '\t') endWord();
    else word = `${word ?? ''}${c}`;
  }
  endCommand();
  return commands;
}

/**
 * The commands a page shows as runnable: the `sh` blocks whole, and the `$ ` lines of bare blocks
 * (a terminal transcript). Each with the file and line of its block, for messages.
 */
export function documentedCommands(file: string): Array<{ where: string; words: string[] }> {
  const found: Array<{ where: string; words: string[] }> = [];
  for (const block of fencedBlocks(readDoc(file))) {
    const where = `${file}:${block.line}`;
    let script: string | undefined;
    if (['sh', 'bash', 'shell'].includes(block.lang)) script = block.body;
    else if (block.lang === '') script = block.body.split('\n').filter((line) => line.startsWith('$ ')).map((line) => line.slice(2)).join('\n');
    if (script === undefined) continue;
    for (const words of shellCommands(script)) found.push({ where, words });
  }
  return found;
}

/** What a command line sends to the local gateway with curl: its method and path; undefined for other commands. */
export function curlRequest(words: readonly string[]): { method: string; path: string } | undefined {
  if (words[0] !== 'curl') return undefined;
  let method: string | undefined;
  let hasBody = false;
  let path: string | undefined;
  for (let i = 1; i < words.length; i += 1) {
    const word = words[i] as string;
    if (word === '-X' || word === '--request') method = words[++i];
    else if (['-d', '--data', '--data-raw', '--data-binary', '--json', '-F', '--form'].includes(word)) {
      hasBody = true;
      i += 1;
    } else if (['-H', '--header', '-o', '--output', '-w', '--write-out', '-u', '--user'].includes(word)) i += 1;
    else {
      const url = /^https?:\/\/(?:127\.0\.0\.1|localhost)(?::[^/]*)?(\/[^?#]*)?/.exec(word);
      if (url !== null) path = url[1] ?? '/';
    }
  }
  if (path === undefined) return undefined;
  return { method: method ?? (hasBody ? 'POST' : 'GET'), path };
}
