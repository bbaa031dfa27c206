/**
 * Who may read the `intercom ui` page: the decision for one HTTP request,
 * as a pure function of its method, URL and headers.
 *
 * The page shows every session, message id and refusal of a broker, so the
 * server listens on 127.0.0.1 only and answers a request only when
 *
 * - it carries the page's token (`?token=…`, 256 random bits made by
 *   `makeToken` when `intercom ui` starts, compared in constant time);
 * - its `Host` header names this server (`127.0.0.1:<port>` or
 *   `localhost:<port>`): a page on another site whose DNS name was rebound
 *   to 127.0.0.1 sends its own name there (DNS rebinding);
 * - its `Origin` header, when present, is this server's own origin: no
 *   other site's script may read or open the event stream;
 * - it is a `GET` or `HEAD` (the page only reads).
 *
 * The checks run in that order, the method last: a request that fails one of
 * the first three gets 403 whatever its method (a `POST` without the token
 * too), and one that passes them but is not a `GET` or `HEAD` gets 405.
 * Every refusal has a short reason and nothing of the broker's state.
 */
import { randomBytes, timingSafeEqual } from "node:crypto"

/** The query parameter that carries the token. */
export const TOKEN_PARAM = "token"

/** A fresh token: 32 random bytes from the OS's CSPRNG, base64url (43 characters). */
export const makeToken = (): string => randomBytes(32).toString("base64url")

/** The parts of a request the decision reads. */
export interface AccessRequest {
  readonly method: string
  /** The request target as sent: path and query, e.g. `/events?token=…`. */
  readonly url: string
  /** Header values by lower-case name. */
  readonly headers: Readonly<Record<string, string | undefined>>
}

/** The decision: let it through (with its path), or refuse it with a status and a reason. */
export type AccessDecision =
  | { readonly _tag: "Allowed"; readonly path: string }
  | { readonly _tag: "Refused"; readonly status: 403 | 405; readonly reason: string }

const refused = (status: 403 | 405, reason: string): AccessDecision => ({ _tag: "Refused", status, reason })

/** The `Host` values that name a server listening on 127.0.0.1 at `port`. */
export const allowedHosts = (port: number): ReadonlyArray<string> => [`127.0.0.1:${port}`, `localhost:${port}`]

/** The origins of a page served by this server. */
export const allowedOrigins = (port: number): ReadonlyArray<string> => allowedHosts(port).map((host) => `http://${host}`)

const sameToken = (given: string, expected: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Decides whether the server at `127.0.0.1:<port>` with `token` answers
 * `request`. The reason of a refusal says what was wrong, never the token.
 */
export const decide = (request: AccessRequest, options: { readonly port: number; readonly token: string }): AccessDecision => {
  const host = request.headers["host"]?.toLowerCase()
  if (host === undefined || !allowedHosts(options.port).includes(host)) {
    return refused(403, `Forbidden: unexpected Host header ${JSON.stringify(host ?? "")}; open the URL that intercom ui printed`)
  }
  const origin = request.headers["origin"]
  if (origin !== undefined && !allowedOrigins(options.port).includes(origin.toLowerCase())) {
    return refused(403, `Forbidden: requests from origin ${JSON.stringify(origin)} are not accepted`)
  }
  let url: URL
  try {
    url = new URL(request.url, `http://${host}`)
  } catch {
    return refused(403, "Forbidden: malformed request target")
  }
  const given = url.searchParams.get(TOKEN_PARAM)
  if (given === null || !sameToken(given, options.token)) {
    return refused(403, "Forbidden: missing or wrong token; open the URL that intercom ui printed")
  }
  // After the token: a request without it learns nothing, not even which methods the server takes.
  if (request.method !== "GET" && request.method !== "HEAD") {
    return refused(405, `Method ${request.method} not allowed: the page only reads`)
  }
  return { _tag: "Allowed", path: url.pathname }
}
