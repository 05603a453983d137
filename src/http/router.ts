/**
 * A small method + path router. Routes are a flat list; a path segment `:name` captures one
 * segment, and a last segment `:name*` captures the rest of the path (model ids such as
 * `groq/openai/gpt-oss-120b` contain slashes). No `new URL` per request: the query is cut off with `indexOf('?')`.
 */

export interface Match<H> {
  handler: H;
  params: Record<string, string>;
  /** The route's path as registered (a bounded label for metrics). */
  pattern: string;
}

export type RouteResult<H> =
  | { kind: 'found'; match: Match<H> }
  | { kind: 'method_not_allowed'; allow: string }
  | { kind: 'not_found' };

export interface Router<H> {
  add(method: string, path: string, handler: H): void;
  match(method: string, url: string): RouteResult<H>;
}

interface Route<H> {
  method: string;
  segments: string[];
  pattern: string;
  exact: string | undefined;
  /** The last segment captures the rest of the path. */
  rest: boolean;
  handler: H;
}

/** Splits a request target into its path (without the query). */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export function createRouter<H>(): Router<H> {
  const routes: Array<Route<H>> = [];
  const exact = new Map<string, Array<Route<H>>>();

  function methodsFor(candidates: Array<Route<H>>): string {
    const methods = new Set<string>();
    for (const r of candidates) methods.add(r.method);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort().join(', ');
  }

  return {
    add(method, path, handler) {
      const hasParam = path.includes('/:');
      const segments = path.split('/');
      const rest = (segments[segments.length - 1] ?? '').endsWith('*');
      const route: Route<H> = { method, segments, pattern: path, exact: hasParam ? undefined : path, rest, handler };
      routes.push(route);
      if (!hasParam) {
        const list = exact.get(path) ?? [];
        list.push(route);
        exact.set(path, list);
      }
    },

    match(method, url) {
      let path = pathOf(url);
      // Tolerate one trailing slash (`/v1/models/`), as the official APIs do.
      if (path.length > 1 && path.charCodeAt(path.length - 1) === 47) path = path.slice(0, -1);
      const lookup = method === 'HEAD' ? 'GET' : method;
      const fixed = exact.get(path);
      if (fixed !== undefined) {
        for (const r of fixed) if (r.method === lookup) return { kind: 'found', match: { handler: r.handler, params: {}, pattern: r.pattern } };
        return { kind: 'method_not_allowed', allow: methodsFor(fixed) };
      }
      const parts = path.split('/');
      const sameShape: Array<Route<H>> = [];
      let found: Match<H> | undefined;
      for (const r of routes) {
        if (r.exact !== undefined) continue;
        if (r.rest ? parts.length < r.segments.length : r.segments.length !== parts.length) continue;
        const params: Record<string, string> = {};
        let ok = true;
        for (let i = 0; i < r.segments.length; i++) {
          const seg = r.segments[i] as string;
          const isRest = r.rest && i === r.segments.length - 1;
          const part = isRest ? parts.slice(i).join('/') : (parts[i] as string);
          if (seg.charCodeAt(0) === 58 /* : */) {
            if (part === '') { ok = false; break; }
            try {
              params[isRest ? seg.slice(1, -1) : seg.slice(1)] = decodeURIComponent(part);
            } catch {
              ok = false;
              break;
            }
          } else if (seg !== part) {
            ok = false;
            break;
          }
        }
        if (!ok) continue;
        sameShape.push(r);
        if (found === undefined && r.method === lookup) found = { handler: r.handler, params, pattern: r.pattern };
      }
      if (found !== undefined) return { kind: 'found', match: found };
      if (sameShape.length > 0) return { kind: 'method_not_allowed', allow: methodsFor(sameShape) };
      return { kind: 'not_found' };
    },
  };
}
