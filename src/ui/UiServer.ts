/**
 * The HTTP server of `intercom ui`: effect's `HttpServer` on Node
 * (`@effect/platform-node/NodeHttpServer`), bound to 127.0.0.1 only.
 *
 * It owns the listening socket and the open event streams, for the Scope
 * `serveUi` runs in: closing it ends every event stream first (so no browser
 * holds the shutdown open) and then closes the server.
 *
 * Every request first passes `Access.decide` (token, `Host`, `Origin`,
 * method). Then:
 *
 * | path          | answer |
 * |---------------|--------|
 * | `/`           | the page (page.ts) |
 * | `/app.js`     | its script |
 * | `/app.css`    | its style sheet |
 * | `/events`     | server-sent events: `event: view` with the latest view as JSON at once, then each new one; a comment line every 15 s keeps proxies and the browser from timing out |
 * | `/view.json`  | the latest view, once |
 *
 * The views come from one `PubSub` the caller publishes serialized views to
 * (sliding, capacity 1, replay 1): a new stream starts with the latest view,
 * and a slow browser skips views instead of piling them up.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Http from "node:http"
import { decide, TOKEN_PARAM } from "./Access.ts"
import { APP_CSS, APP_JS, pageHtml } from "./page.ts"

/** The only address the server listens on. */
export const UI_HOST = "127.0.0.1"

/** How often an idle event stream sends a comment line. */
export const KEEP_ALIVE = Duration.seconds(15)

/** What `serveUi` needs. */
export interface UiServerOptions {
  /** The TCP port; 0 picks a free one. */
  readonly port: number
  /** The page's token (Access.makeToken). */
  readonly token: string
  /** Serialized views; subscribers get the latest at once (see `makeViewHub`). */
  readonly views: PubSub.PubSub<string>
}

/** A running server. */
export interface UiServer {
  /** The port it listens on. */
  readonly port: number
  /** The page's URL with its token: what `intercom ui` prints. */
  readonly url: string
}

/** The server could not listen (port taken, not permitted, …). */
export class UiServeError extends Data.TaggedError("UiServeError")<{
  readonly port: number
  readonly reason: string
}> {
  override get message(): string {
    return `Cannot serve the intercom ui on ${UI_HOST}:${this.port}: ${this.reason}. Choose another --port, or 0 for any free port.`
  }
}

/** The hub views are published to: each subscriber keeps only the latest it has not read yet. */
export const makeViewHub = (): Effect.Effect<PubSub.PubSub<string>> => PubSub.sliding<string>({ capacity: 1, replay: 1 })

/** The headers every answer carries: nothing cached, nothing framed, no referrer (the URL holds the token). */
const COMMON_HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
}

const respond = (body: string, contentType: string, status = 200): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(body, { status, contentType, headers: COMMON_HEADERS })

const eventStream = (views: PubSub.PubSub<string>, closing: Deferred.Deferred<void>): HttpServerResponse.HttpServerResponse => {
  const frames = Stream.fromPubSub(views).pipe(
    Stream.map((json) => `event: view\ndata: ${json}\n\n`),
    // Stream.tick ticks at once too; the stream starts with the view, so the first tick is dropped.
    Stream.merge(Stream.tick(KEEP_ALIVE).pipe(Stream.drop(1), Stream.map(() => ": keep-alive\n\n"))),
    Stream.interruptWhen(Deferred.await(closing)),
    Stream.encodeText
  )
  return HttpServerResponse.stream(frames, {
    contentType: "text/event-stream; charset=utf-8",
    headers: COMMON_HEADERS
  })
}

const latestView = (views: PubSub.PubSub<string>): Effect.Effect<string> =>
  Effect.scoped(Effect.flatMap(PubSub.subscribe(views), PubSub.take))

/**
 * Serves the page on 127.0.0.1:`port` until the Scope closes. Fails with
 * `UiServeError` when it cannot listen.
 */
export const serveUi = (options: UiServerOptions): Effect.Effect<UiServer, UiServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* NodeHttpServer.make(() => Http.createServer(), {
      host: UI_HOST,
      port: options.port,
      gracefulShutdownTimeout: Duration.seconds(1)
    }).pipe(
      Effect.mapError((error) => new UiServeError({ port: options.port, reason: describeCause(error.cause) }))
    )
    const port = server.address._tag === "UnixPathAddress" ? options.port : server.address.port
    const closing = yield* Deferred.make<void>()
    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const decision = decide({ method: request.method, url: request.url, headers: request.headers }, {
        port,
        token: options.token
      })
      if (decision._tag === "Refused") return respond(`${decision.reason}\n`, "text/plain; charset=utf-8", decision.status)
      switch (decision.path) {
        case "/":
          return respond(pageHtml(options.token), "text/html; charset=utf-8")
        case "/app.js":
          return respond(APP_JS, "text/javascript; charset=utf-8")
        case "/app.css":
          return respond(APP_CSS, "text/css; charset=utf-8")
        case "/events":
          return eventStream(options.views, closing)
        case "/view.json":
          return respond(yield* latestView(options.views), "application/json; charset=utf-8")
        default:
          return respond("Not found\n", "text/plain; charset=utf-8", 404)
      }
    })
    yield* server.serve(app)
    // Added last, so it runs first on close: the event streams end before the server waits for its connections.
    yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined))
    return { port, url: `http://${UI_HOST}:${port}/?${TOKEN_PARAM}=${options.token}` }
  })

const describeCause = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)
