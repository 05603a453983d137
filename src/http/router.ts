/**
 * A small method + path router. Routes are a flat list; a path segment `:name` captures one
 * segment, and a last segment `:name*` captures the rest of the path (model ids such as
 * `groq/openai/gpt-oss-120b` contain slashes). No `new URL` per request: the query is cut off with `indexOf('?')`.
 *
 * The method form, for Google's paths (`/v1beta/models/{model}:generateContent`): a last segment
 * `:name*:key(one|two)` captures the rest of the path up to its LAST `:` as `name` (a model id may
 * hold `/` and `:` itself: `ollama/qwen3:8b`) and what follows as `key`, which must be one of the
 * methods listed; a path whose method is not listed does not match the route.
 */

export interface Match<H> {
  handler: H;
  params: Record<string, string>;
  /** The route's path as registered (a bounded label for metrics). */
  pattern: string;
}

export type RouteResult<H> =
  | { kind: 'found'; match: Match<H> }
  /** `pattern`: the first route of the path's shape, whose owner answers the 405. */
  | { kind: 'method_not_allowed'; allow: string; pattern: string }
  | { kind: 'not_found' };

export interface Router<H> {
  add(method: string, path: string, handler: H): void;
  match(method: string, url: string): RouteResult<H>;
}

/** The method form of a last segment: the rest's parameter, the method's parameter, the methods. */
interface MethodForm {
  name: string;
  key: string;
  methods: ReadonlySet<string>;
}

interface Route<H> {
  method: string;
  segments: string[];
  pattern: string;
  exact: string | undefined;
  /** The last segment captures the rest of the path. */
  rest: boolean;
  /** The rest ends in `:method`, split off at its last `:`. */
  methodForm: MethodForm | undefined;
  handler: H;
}

/** `:name*:key(one|two)`. */
const METHOD_FORM = /^:([A-Za-z_][\w]*)\*:([A-Za-z_][\w]*)\(([\w-]+(?:\|[\w-]+)*)\)$/;

/** Splits a request target into its path (without the query). */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** The query of a request target, without its `?` ('' when there is none). */
export function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

/** Reads the rest of a path under a method-form route into `params`; false when it does not match. */
function methodParams(rest: string, form: MethodForm, params: Record<string, string>): boolean {
  const colon = rest.lastIndexOf(':');
  if (colon <= 0) return false;
  const method = rest.slice(colon + 1);
  if (!form.methods.has(method)) return false;
  params[form.name] = rest.slice(0, colon);
  params[form.key] = method;
  return true;
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
      const last = segments[segments.length - 1] ?? '';
      const form = METHOD_FORM.exec(last);
      const methodForm = form === null ? undefined : { name: form[1] as string, key: form[2] as string, methods: new Set((form[3] as string).split('|')) };
      const rest = methodForm !== undefined || last.endsWith('*');
      const route: Route<H> = { method, segments, pattern: path, exact: hasParam ? undefined : path, rest, methodForm, handler };
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
        return { kind: 'method_not_allowed', allow: methodsFor(fixed), pattern: (fixed[0] as Route<H>).pattern };
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
            let value: string;
            try {
              value = decodeURIComponent(part);
            } catch {
              ok = false;
              break;
            }
            if (isRest && r.methodForm !== undefined) {
              if (!methodParams(value, r.methodForm, params)) { ok = false; break; }
            } else {
              params[isRest ? seg.slice(1, -1) : seg.slice(1)] = value;
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
      const first = sameShape[0];
      if (first !== undefined) return { kind: 'method_not_allowed', allow: methodsFor(sameShape), pattern: first.pattern };
      return { kind: 'not_found' };
    },
  };
}
