/**
 * Files llmux writes that must never be seen half-written: the key store, the config written by
 * `llmux setup`, the reasoning-seal secret.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { dirname } from 'node:path';

/** Writes a file atomically: a temp file beside it, fsync, rename over, fsync the directory. */
export function writeFileAtomic(path: string, text: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (err) {
    try { unlinkSync(tmp); } catch { /* already gone */ }
    throw err;
  }
  try {
    const dfd = openSync(dirname(path), 'r');
    try { fsyncSync(dfd); } finally { closeSync(dfd); }
  } catch {
    // Some filesystems refuse a directory fsync; the rename is still atomic.
  }
}
