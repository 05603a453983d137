/**
 * A tiny cookie-keeping HTTP client for page tests over real sockets (redirects not followed).
 */
export interface PageAnswer {
  status: number;
  headers: Headers;
  text: string;
  setCookies: string[];
}

export interface WebClient {
  cookies: Map<string, string>;
  get(path: string, headers?: Record<string, string>): Promise<PageAnswer>;
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<PageAnswer>;
}

export function createWebClient(baseUrl: string): WebClient {
  const cookies = new Map<string, string>();
  async function send(path: string, init: RequestInit): Promise<PageAnswer> {
    const headers = new Headers(init.headers);
    if (cookies.size > 0 && !headers.has('cookie')) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(`${baseUrl}${path}`, { ...init, headers, redirect: 'manual' });
    const setCookies = res.headers.getSetCookie();
    for (const c of setCookies) {
      const [pair = '', ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (attrs.some((a) => a.trim().toLowerCase() === 'max-age=0')) cookies.delete(name);
      else cookies.set(name, value);
    }
    return { status: res.status, headers: res.headers, text: await res.text(), setCookies };
  }
  return {
    cookies,
    get: (path, headers = {}) => send(path, { headers }),
    post: (path, form, headers = {}) => send(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    }),
  };
}

/** The value of the hidden `csrf` field on a page. */
export function csrfOf(page: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(page);
  if (m === null) throw new Error('no csrf field on the page');
  return m[1] as string;
}
