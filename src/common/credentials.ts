/**
 * Where a client's llmux key may come: a header (`x-api-key`), a header with a scheme
 * (`Authorization: Bearer`), or a query parameter (Gemini's `?key=`). Each wire format names its
 * own sources (src/dialects/); src/auth/authenticate.ts reads them in that order. The request
 * line's query never reaches the log (src/gateway/request-log.ts writes the path alone), so a key
 * in `?key=` stays out of it.
 */
import type { IncomingHttpHeaders } from 'node:http';

export type CredentialSource =
  /** A header (lower case); with `scheme`, a value `<scheme> <key>` (`Authorization: Bearer …`). */
  | { header: string; scheme?: string }
  /** A query parameter. */
  | { query: string };

/** `x-api-key`, then `Authorization: Bearer`: what every format llmux serves so far accepts, and what other routes read. */
export const STANDARD_CREDENTIALS: readonly CredentialSource[] = [{ header: 'x-api-key' }, { header: 'authorization', scheme: 'bearer' }];

/** A key as presented: which source carried it (a header name, or `?name` for a query parameter), and the key. */
export interface PresentedCredential {
  /** The first source the client used; null when it sent none. */
  source: string | null;
  /** The key; undefined when there is none, or the source held another scheme (`Authorization: Basic`). */
  secret: string | undefined;
}

/**
 * The key a request presents: from the first of `sources` that it sent. A header sent with another
 * scheme than the source's ends the search (it is what the client meant as its key).
 */
export function readCredential(headers: IncomingHttpHeaders, query: string, sources: readonly CredentialSource[]): PresentedCredential {
  let params: URLSearchParams | undefined;
  for (const source of sources) {
    if ('query' in source) {
      if (query === '') continue;
      params ??= new URLSearchParams(query);
      const value = params.get(source.query);
      if (value !== null && value !== '') return { source: `?${source.query}`, secret: value.trim() };
      continue;
    }
    const value = headers[source.header];
    if (typeof value !== 'string' || value === '') continue;
    if (source.scheme === undefined) return { source: source.header, secret: value.trim() };
    const space = value.indexOf(' ');
    const scheme = space === -1 ? value : value.slice(0, space);
    return { source: source.header, secret: scheme.toLowerCase() === source.scheme ? value.slice(space + 1).trim() : undefined };
  }
  return { source: null, secret: undefined };
}
