/**
 * The request log (llmux.md section 4): one JSON line per request on stderr with time, request id,
 * key id, method, path, model, provider, status, duration, time to first byte, tokens and cost.
 * Never a key or a body. With routing (llmux.md section 10): `model` is the model that answered,
 * `requested_model` the id asked for when an alias or a route had another model answer it,
 * `deployment` the deployment that answered and `provider_key` its provider key by its label (the
 * environment variable or its place in the config), never the key.
 */
import type { RequestRecord } from './request-record.ts';
import { promptTokens } from '../formats/usage.ts';

/** One line of the request log. */
export interface LogRecord {
  time: string;
  request_id: string;
  key_id: string | null;
  method: string;
  path: string;
  model: string | null;
  provider: string | null;
  requested_model?: string;
  deployment?: string;
  provider_key?: string;
  status: number;
  duration_ms: number;
  ttfb_ms: number | null;
  tokens_in: number | null;
  tokens_out: number | null;
  cost_usd: number | null;
  stream?: boolean;
  translated?: boolean;
  attempts?: RequestRecord['attempts'];
  stream_error?: string;
  error_code?: string;
  warnings?: string[];
}

/** A line that is not about one request: start-up, key store trouble, bugs. */
export interface LogMessage { time: string; level: 'warn' | 'error' | 'info'; message: string }

export type Logger = (line: LogRecord | LogMessage) => void;

/** Longest model id or path written to the log; both may come from a client. */
const MAX_LOGGED_TEXT = 200;

/** The log line of a finished request. */
export function logLine(request: { id: string; method: string; path: string; startedMs: number; nowMs: number; status: number }, record: RequestRecord): LogRecord {
  const line: LogRecord = {
    time: isoTime(request.startedMs),
    request_id: request.id,
    key_id: record.keyId ?? null,
    method: request.method,
    path: request.path.slice(0, MAX_LOGGED_TEXT),
    model: record.model?.slice(0, MAX_LOGGED_TEXT) ?? null,
    provider: record.provider ?? null,
    status: request.status,
    duration_ms: request.nowMs - request.startedMs,
    ttfb_ms: record.ttfbMs ?? null,
    tokens_in: record.usage === undefined ? null : promptTokens(record.usage),
    tokens_out: record.usage?.outputTokens ?? null,
    cost_usd: record.costUsd === undefined ? null : Math.round(record.costUsd * 1e8) / 1e8,
  };
  if (record.requestedModel !== undefined && record.requestedModel !== record.model) line.requested_model = record.requestedModel.slice(0, MAX_LOGGED_TEXT);
  if (record.deployment !== undefined) line.deployment = record.deployment;
  if (record.providerKey !== undefined) line.provider_key = record.providerKey;
  if (record.stream !== undefined) line.stream = record.stream;
  if (record.translated !== undefined) line.translated = record.translated;
  if (record.attempts.length > 0) line.attempts = record.attempts;
  if (record.streamError !== undefined) line.stream_error = record.streamError;
  if (record.errorCode !== undefined) line.error_code = record.errorCode;
  if (record.warnings !== undefined) line.warnings = record.warnings;
  return line;
}

/** The second of the last time written, and its text up to the milliseconds (`2026-11-26T19:02:50.`). */
let isoSecond = NaN;
let isoPrefix = '';

/**
 * `new Date(ms).toISOString()`, with the date and time up to the second formatted once per second:
 * a busy gateway writes many lines a second, and formatting a date is a third of building a line.
 */
export function isoTime(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_FOUR_DIGIT_YEAR_MS) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4);
  }
  const milli = ms - second * 1000;
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/** The last instant `toISOString` writes with a four-digit year (9999-12-31T23:59:59.999Z). */
const MAX_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/**
 * A line with credentials taken out of what in it may quote an upstream (its stream error and
 * warnings, a message's text): the same line when there was none.
 */
export function redactLine(line: LogRecord | LogMessage, redact: (text: string) => string): LogRecord | LogMessage {
  if ('message' in line) {
    const message = redact(line.message);
    return message === line.message ? line : { ...line, message };
  }
  const streamError = line.stream_error === undefined ? undefined : redact(line.stream_error);
  const warnings = line.warnings?.map(redact);
  if (streamError === line.stream_error && (warnings === undefined || warnings.every((w, i) => w === line.warnings?.[i]))) return line;
  return { ...line, ...(streamError === undefined ? {} : { stream_error: streamError }), ...(warnings === undefined ? {} : { warnings }) };
}

/** A log line for anything that is not one request's. */
export function logMessage(level: LogMessage['level'], message: string): LogMessage {
  return { time: new Date().toISOString(), level, message };
}

/**
 * One JSON line per request on stderr. Lines are gathered and written once per event-loop turn,
 * so a busy gateway makes one write call for many requests rather than one each.
 */
export function createStderrLogger(): Logger {
  let pending = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const text = pending;
    pending = '';
    process.stderr.write(text);
  };
  return (line) => {
    pending += `${JSON.stringify(line)}\n`;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}
