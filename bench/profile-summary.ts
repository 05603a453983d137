/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) by self time: which functions, and which
 * files, the samples landed in. Percentages are of busy time (everything but `(idle)`).
 *
 * Run: `npx tsx bench/profile-summary.ts FILE.cpuprofile [--top N]`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isEntryPoint } from './entry.ts';

/** The parts of the `.cpuprofile` format read here. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    hitCount?: number;
    children?: number[];
  }>;
  startTime: number;
  endTime: number;
  samples?: number[];
  /** Microseconds since the previous sample, one per sample. */
  timeDeltas?: number[];
}

export interface SelfTimeRow {
  /** `name (file:line)`; anonymous functions are `(anonymous)`. */
  name: string;
  file: string;
  selfMs: number;
  /** Share of busy time, 0–100. */
  percent: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  busyMs: number;
  functions: SelfTimeRow[];
  files: SelfTimeRow[];
  /**
   * llmux's own functions (files under dist/ or src/) by total time: self time plus everything
   * they called, Node internals included. A recursive function is counted once per stack.
   */
  ownTotals: SelfTimeRow[];
}

function isOwnFile(file: string): boolean {
  return file.startsWith('dist/') || file.startsWith('src/');
}

function functionKey(callFrame: CpuProfile['nodes'][number]['callFrame']): { name: string; file: string } {
  const file = shortFile(callFrame.url);
  const name = `${callFrame.functionName === '' ? '(anonymous)' : callFrame.functionName}${file === '' ? '' : ` (${file}:${callFrame.lineNumber + 1})`}`;
  return { name, file };
}

/** Shortens a script URL to something readable: `dist/…`, `node:…`, or the base name. */
export function shortFile(url: string): string {
  if (url === '') return '';
  if (url.startsWith('node:')) return url;
  const dist = url.lastIndexOf('/dist/');
  if (dist !== -1) return url.slice(dist + 1);
  const src = url.lastIndexOf('/src/');
  if (src !== -1) return url.slice(src + 1);
  return url.slice(url.lastIndexOf('/') + 1);
}

/** Self time per function and per file, largest first. */
export function summariseProfile(profile: CpuProfile): ProfileSummary {
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  if (samples.length > 0 && deltas.length === samples.length) {
    // A sample's time is the gap to the next one; V8 records the gap before it, so shift by one.
    for (let i = 0; i < samples.length; i++) {
      const next = deltas[i + 1] ?? 0;
      const id = samples[i] as number;
      selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, next));
    }
  } else {
    // No timeline: spread the profile's duration evenly over the hit counts.
    const hits = profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0);
    const perHit = hits > 0 ? (profile.endTime - profile.startTime) / hits : 0;
    for (const n of profile.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * perHit);
  }

  const byFunction = new Map<string, { name: string; file: string; us: number }>();
  const byFile = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    totalUs += us;
    const { functionName } = node.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const { name, file } = functionKey(node.callFrame);
    const row = byFunction.get(name) ?? { name, file, us: 0 };
    row.us += us;
    byFunction.set(name, row);
    const fileKey = file === '' ? functionName : file;
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const pct = (us: number): number => (busyUs > 0 ? (us / busyUs) * 100 : 0);
  const functions = [...byFunction.values()]
    .map((r) => ({ name: r.name, file: r.file, selfMs: r.us / 1000, percent: pct(r.us) }))
    .sort((a, b) => b.selfMs - a.selfMs);
  const files = [...byFile.entries()]
    .map(([file, us]) => ({ name: file, file, selfMs: us / 1000, percent: pct(us) }))
    .sort((a, b) => b.selfMs - a.selfMs);
  return { totalMs: totalUs / 1000, idleMs: idleUs / 1000, busyMs: busyUs / 1000, functions, files, ownTotals: ownTotals(profile, selfUs, pct) };
}

function ownTotals(profile: CpuProfile, selfUs: Map<number, number>, pct: (us: number) => number): SelfTimeRow[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  // Total per node: its self time plus its subtree's, children before parents.
  const totalUs = new Map<number, number>();
  const visit = (id: number): number => {
    const known = totalUs.get(id);
    if (known !== undefined) return known;
    let sum = selfUs.get(id) ?? 0;
    for (const child of byId.get(id)?.children ?? []) sum += visit(child);
    totalUs.set(id, sum);
    return sum;
  };
  const rows = new Map<string, { name: string; file: string; us: number }>();
  for (const node of profile.nodes) {
    const { name, file } = functionKey(node.callFrame);
    if (!isOwnFile(file)) continue;
    // Only the outermost frame of a function on each stack counts, or recursion counts twice.
    let up = parent.get(node.id);
    let nested = false;
    while (up !== undefined) {
      const ancestor = byId.get(up);
      if (ancestor !== undefined && functionKey(ancestor.callFrame).name === name) {
        nested = true;
        break;
      }
      up = parent.get(up);
    }
    if (nested) continue;
    const row = rows.get(name) ?? { name, file, us: 0 };
    row.us += visit(node.id);
    rows.set(name, row);
  }
  return [...rows.values()]
    .map((r) => ({ name: r.name, file: r.file, selfMs: r.us / 1000, percent: pct(r.us) }))
    .sort((a, b) => b.selfMs - a.selfMs);
}

/**
 * The summary as text: the top functions by self time, the top files, then llmux's functions by
 * total time. With the number of `requests` the profile served, each row also shows µs per request.
 */
export function formatSummary(title: string, summary: ProfileSummary, top = 25, requests?: number): string {
  const perRequest = requests !== undefined && requests > 0;
  const row = (r: SelfTimeRow): string =>
    `  ${r.percent.toFixed(1).padStart(6)}  ${r.selfMs.toFixed(0).padStart(8)}${perRequest ? (r.selfMs * 1000 / requests).toFixed(1).padStart(9) : ''}  ${r.name}`;
  const header = (what: string): string => `  ${'%'.padStart(6)}  ${'ms'.padStart(8)}${perRequest ? 'µs/req'.padStart(9) : ''}  ${what}`;
  const lines = [`${title}: busy ${summary.busyMs.toFixed(0)} ms of ${summary.totalMs.toFixed(0)} ms sampled${perRequest ? `, ${requests} requests, ${(summary.busyMs * 1000 / requests).toFixed(0)} µs busy per request` : ''}`];
  lines.push(header('function (self time)'));
  for (const r of summary.functions.slice(0, top)) lines.push(row(r));
  lines.push(header('file (self time)'));
  for (const r of summary.files.slice(0, Math.ceil(top / 2))) lines.push(row(r));
  const own = summary.files.filter((r) => isOwnFile(r.file)).reduce((sum, r) => sum + r.percent, 0);
  if (summary.ownTotals.length > 0) {
    lines.push(`  llmux's own code: ${own.toFixed(1)}% self`);
    lines.push(header('llmux function (total time: self + everything it calls)'));
    for (const r of summary.ownTotals.slice(0, top)) lines.push(row(r));
  }
  return lines.join('\n');
}

if (isEntryPoint(import.meta.url)) {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string' } }, allowPositionals: true });
  if (positionals.length === 0) {
    process.stderr.write('usage: tsx bench/profile-summary.ts FILE.cpuprofile… [--top N]\n');
    process.exit(2);
  }
  for (const file of positionals) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    process.stdout.write(`${formatSummary(file, summariseProfile(profile), Number(values.top ?? '25'))}\n\n`);
  }
}
