/**
 * The state server's address: `redis://[user:password@]host:port[/db]` or `rediss://` for TLS
 * (llmux.md section 6). No message made here ever holds the password.
 */

const DEFAULT_PORT = 6379;
const URL_FORM = 'redis://[user:password@]host:port[/db] (or rediss:// for TLS)';

/** Where the state server is, from `parseStateUrl`. */
export interface StateTarget {
  tls: boolean;
  host: string;
  port: number;
  db: number;
  username?: string;
  password?: string;
  /** The URL without credentials, for logs and messages. */
  displayUrl: string;
}

/**
 * Reads `redis://[user:password@]host:port[/db]` or `rediss://…` (TLS); the port defaults to 6379
 * and the database to 0. Throws an Error naming the problem; no message ever holds the password
 * (nor the URL, which may).
 */
export function parseStateUrl(url: string): StateTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not rethrown with a cause: Node's URL error carries the input, password included.
    throw new Error(`state URL is not a valid URL (check the host and port); expected ${URL_FORM}`);
  }
  const scheme = parsed.protocol;
  if (scheme !== 'redis:' && scheme !== 'rediss:') throw new Error(`state URL must start with redis:// or rediss://, not ${scheme}//`);
  if (parsed.hostname === '') throw new Error(`state URL has no host; expected ${URL_FORM}`);
  if (parsed.search !== '' || parsed.hash !== '') throw new Error(`state URL takes no query string or fragment; expected ${URL_FORM}`);
  const port = parsed.port === '' ? DEFAULT_PORT : Number(parsed.port);
  if (port === 0) throw new Error('state URL port must be between 1 and 65535');

  const path = parsed.pathname;
  let db = 0;
  if (path !== '' && path !== '/') {
    if (!/^\/\d{1,9}$/.test(path)) throw new Error(`state URL database must be a number after the host, like redis://host:6379/0, not "${path}"`);
    db = Number(path.slice(1));
  }

  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(parsed.username);
    password = decodeURIComponent(parsed.password);
  } catch {
    throw new Error('state URL user name or password is not valid percent-encoding');
  }
  if (username !== '' && password === '') throw new Error('state URL has a user name but no password; use redis://user:password@host:port');

  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const target: StateTarget = { tls: scheme === 'rediss:', host, port, db, displayUrl: `${scheme}//${parsed.hostname}:${port}/${db}` };
  if (username !== '') target.username = username;
  if (password !== '') target.password = password;
  return target;
}

/** Why a command got no reply. */
