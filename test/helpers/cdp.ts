/**
 * Headless Chromium driven over the Chrome DevTools Protocol on `--remote-debugging-pipe`, with
 * no npm dependency: Chromium reads commands on fd 3 and writes answers and events on fd 4, each
 * message JSON followed by a NUL byte.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { skipUnlessInstalled } from './ci.ts';

const CALL_TIMEOUT_MS = 20_000;

/** The Chromium binary: `$CHROMIUM` or `chromium` / `chromium-browser` on the PATH. */
export function findChromium(): string | undefined {
  const candidates = [process.env['CHROMIUM'], 'chromium', 'chromium-browser', 'google-chrome'].filter((c): c is string => c !== undefined && c !== '');
  for (const c of candidates) {
    const r = spawnSync(c, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (r.status === 0 && /chrom/i.test(r.stdout)) return c;
  }
  return undefined;
}

/**
 * Whether browser tests should be skipped: a message when Chromium is missing outside CI, false
 * otherwise. In CI (env `CI` set) they always run, so a missing Chromium fails them.
 */
export function browserSkip(): string | false {
  return skipUnlessInstalled(findChromium() !== undefined, 'Chromium is not installed (apt-get install -y chromium); browser tests');
}

interface Pending { resolve(value: any): void; reject(err: Error): void; timer: NodeJS.Timeout; method: string }
type Listener = (params: any, sessionId: string | undefined) => void;

export interface Page {
  readonly sessionId: string;
  /** Problems the page reported (CSP violations, script errors, failed loads). */
  readonly problems: string[];
  goto(url: string): Promise<void>;
  evaluate<T = unknown>(expression: string): Promise<T>;
  /** Focuses the element and types `text` as keyboard input. */
  type(selector: string, text: string): Promise<void>;
  select(selector: string, value: string): Promise<void>;
  /** Clicks and waits for the page that the click loads. */
  clickAndWait(selector: string): Promise<void>;
  click(selector: string): Promise<void>;
  text(): Promise<string>;
  /** Saves a full-page PNG, or of one element only. */
  screenshot(path: string, selector?: string): Promise<void>;
  close(): Promise<void>;
}

export interface Browser {
  newPage(viewport: { width: number; height: number; mobile?: boolean; deviceScaleFactor?: number }): Promise<Page>;
  close(): Promise<void>;
}

/** Starts headless Chromium with a throw-away profile. */
export async function launchChromium(binary = findChromium()): Promise<Browser> {
  if (binary === undefined) throw new Error('Chromium is not installed: apt-get install -y chromium (or set CHROMIUM to its path)');
  const profile = mkdtempSync(join(tmpdir(), 'llmux-chromium-'));
  const child: ChildProcess = spawn(binary, [
    '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-extensions',
    '--hide-scrollbars', '--mute-audio', `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-4000); });

  let nextId = 1;
  const pending = new Map<number, Pending>();
  const listeners = new Set<{ method: string; listener: Listener }>();
  let exited = false;
  const fragments: Buffer[] = [];

  fromBrowser.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nul = chunk.indexOf(0); nul !== -1; nul = chunk.indexOf(0, start)) {
      fragments.push(chunk.subarray(start, nul));
      const text = Buffer.concat(fragments).toString('utf8');
      fragments.length = 0;
      start = nul + 1;
      dispatch(JSON.parse(text) as { id?: number; method?: string; params?: unknown; result?: unknown; error?: { message: string }; sessionId?: string });
    }
    if (start < chunk.length) fragments.push(chunk.subarray(start));
  });

  function dispatch(message: { id?: number; method?: string; params?: unknown; result?: unknown; error?: { message: string }; sessionId?: string }): void {
    if (message.id !== undefined) {
      const p = pending.get(message.id);
      if (p === undefined) return;
      pending.delete(message.id);
      clearTimeout(p.timer);
      if (message.error !== undefined) p.reject(new Error(`${p.method}: ${message.error.message}`));
      else p.resolve(message.result);
      return;
    }
    if (message.method === undefined) return;
    for (const l of [...listeners]) if (l.method === message.method) l.listener(message.params, message.sessionId);
  }

  child.once('exit', (code) => {
    exited = true;
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`Chromium exited (${String(code)}) during ${p.method}: ${stderr}`));
    }
    pending.clear();
  });

  function send<T = any>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    if (exited) return Promise.reject(new Error(`Chromium has exited; cannot send ${method}: ${stderr}`));
    const id = nextId++;
    const message = JSON.stringify(sessionId === undefined ? { id, method, params } : { id, method, params, sessionId });
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${method}: no answer from Chromium within ${CALL_TIMEOUT_MS} ms`));
      }, CALL_TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer, method });
      toBrowser.write(`${message}\0`);
    });
  }

  function waitFor(method: string, sessionId: string, what: string): Promise<any> {
    return new Promise((resolve, reject) => {
      const entry = {
        method,
        listener: (params: any, sid: string | undefined) => {
          if (sid !== sessionId) return;
          listeners.delete(entry);
          clearTimeout(timer);
          resolve(params);
        },
      };
      const timer = setTimeout(() => {
        listeners.delete(entry);
        reject(new Error(`no ${method} within ${CALL_TIMEOUT_MS} ms after ${what}`));
      }, CALL_TIMEOUT_MS);
      listeners.add(entry);
    });
  }

  // The first command's answer proves the pipe works.
  await send('Browser.getVersion');

  async function newPage(viewport: { width: number; height: number; mobile?: boolean; deviceScaleFactor?: number }): Promise<Page> {
    const { targetId } = await send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    const problems: string[] = [];
    const onLog = {
      method: 'Log.entryAdded',
      listener: (params: any, sid: string | undefined) => {
        if (sid === sessionId && (params.entry.level === 'error' || params.entry.level === 'warning')) problems.push(`${params.entry.source}: ${params.entry.text}`);
      },
    };
    const onException = {
      method: 'Runtime.exceptionThrown',
      listener: (params: any, sid: string | undefined) => {
        if (sid === sessionId) problems.push(`exception: ${params.exceptionDetails.exception?.description ?? params.exceptionDetails.text}`);
      },
    };
    listeners.add(onLog);
    listeners.add(onException);
    await send('Page.enable', {}, sessionId);
    await send('Runtime.enable', {}, sessionId);
    await send('Log.enable', {}, sessionId);
    await send('Emulation.setDeviceMetricsOverride', {
      width: viewport.width, height: viewport.height, deviceScaleFactor: viewport.deviceScaleFactor ?? 1, mobile: viewport.mobile === true,
    }, sessionId);
    if (viewport.mobile === true) await send('Emulation.setTouchEmulationEnabled', { enabled: true }, sessionId);

    const evaluate = async <T>(expression: string): Promise<T> => {
      const answer = await send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
        'Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId,
      );
      if (answer.exceptionDetails !== undefined) throw new Error(`in the page: ${answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text}`);
      return answer.result.value as T;
    };
    const q = (selector: string): string => `document.querySelector(${JSON.stringify(selector)})`;
    const mustExist = async (selector: string): Promise<void> => {
      if (!(await evaluate<boolean>(`${q(selector)} !== null`))) throw new Error(`no element matches ${selector} on ${await evaluate<string>('location.href')}`);
    };

    return {
      sessionId,
      problems,
      async goto(url) {
        const loaded = waitFor('Page.loadEventFired', sessionId, `navigating to ${url}`);
        const result = await send<{ errorText?: string }>('Page.navigate', { url }, sessionId);
        if (result.errorText !== undefined) throw new Error(`navigating to ${url}: ${result.errorText}`);
        await loaded;
      },
      evaluate,
      async type(selector, text) {
        await mustExist(selector);
        await evaluate(`${q(selector)}.focus()`);
        await send('Input.insertText', { text }, sessionId);
      },
      async select(selector, value) {
        await mustExist(selector);
        await evaluate(`(() => { const el = ${q(selector)}; el.value = ${JSON.stringify(value)}; el.dispatchEvent(new Event('change', { bubbles: true })); })()`);
      },
      async clickAndWait(selector) {
        await mustExist(selector);
        const loaded = waitFor('Page.loadEventFired', sessionId, `clicking ${selector}`);
        await evaluate(`${q(selector)}.click()`);
        await loaded;
      },
      async click(selector) {
        await mustExist(selector);
        await evaluate(`${q(selector)}.click()`);
      },
      text: () => evaluate<string>('document.body.innerText'),
      async screenshot(path, selector) {
        let clip: { x: number; y: number; width: number; height: number; scale: number };
        if (selector === undefined) {
          const metrics = await send<{ cssContentSize: { width: number; height: number } }>('Page.getLayoutMetrics', {}, sessionId);
          clip = { x: 0, y: 0, width: Math.ceil(metrics.cssContentSize.width), height: Math.ceil(metrics.cssContentSize.height), scale: 1 };
        } else {
          await mustExist(selector);
          const box = await evaluate<{ x: number; y: number; width: number; height: number }>(
            `(() => { const r = ${q(selector)}.getBoundingClientRect(); return { x: r.left + scrollX, y: r.top + scrollY, width: Math.ceil(r.width), height: Math.ceil(r.height) }; })()`,
          );
          clip = { ...box, scale: 1 };
        }
        const { data } = await send<{ data: string }>('Page.captureScreenshot', { format: 'png', clip, captureBeyondViewport: true }, sessionId);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, Buffer.from(data, 'base64'));
      },
      async close() {
        listeners.delete(onLog);
        listeners.delete(onException);
        await send('Target.closeTarget', { targetId }).catch(() => undefined);
      },
    };
  }

  return {
    newPage,
    async close() {
      const gone = new Promise<void>((resolve) => {
        if (exited) resolve();
        else child.once('exit', () => resolve());
      });
      await send('Browser.close').catch(() => undefined);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await gone;
      clearTimeout(timer);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
