/**
 * The `intercom ui` HTTP server (src/ui/UiServer.ts) in-process, spoken to
 * with node:http so every header (Host, Origin) is the test's choice: what
 * it answers with the token, and what it refuses without it, from another
 * origin or for another Host.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, PubSub, type Scope } from "effect"
import { TestClock } from "effect/testing"
import * as http from "node:http"
import { makeViewHub, serveUi } from "../../src/ui/UiServer.ts"

const TOKEN = "test-token-0123456789abcdefghijklmnopqrstuv"

interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** One request; for an event stream, the body up to the first blank line (one event), then the socket is closed. */
const request = (
  port: number,
  path: string,
  options: { readonly method?: string; readonly headers?: Readonly<Record<string, string>>; readonly firstEvent?: boolean } = {}
): Effect.Effect<Answer> =>
  Effect.callback<Answer>((resume) => {
    const req = http.request({
      host: "127.0.0.1",
      port,
      path,
      method: options.method ?? "GET",
      headers: { host: `127.0.0.1:${port}`, ...options.headers }
    }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        body += chunk
        if (options.firstEvent === true && body.includes("\n\n")) {
          res.destroy()
          resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body }))
        }
      })
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body })))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    req.end()
    return Effect.sync(() => req.destroy())
  })

/** An open event stream: the text received so far, and a wait for `text` to arrive. */
const openStream = (port: number, path: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly req: http.ClientRequest; readonly res: http.IncomingMessage; readonly text: () => string }>((resume) => {
      const req = http.get({ host: "127.0.0.1", port, path, headers: { host: `127.0.0.1:${port}` } }, (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        resume(Effect.succeed({ req, res, text: () => text }))
      })
      req.on("error", (error) => resume(Effect.die(error)))
    }),
    ({ req }) => Effect.sync(() => req.destroy())
  ).pipe(Effect.map(({ res, text }) => ({
    text,
    /** Waits (on socket events, not on a clock) until the stream has received `expected`. */
    received: (expected: string) =>
      Effect.callback<void>((resume) => {
        const check = () => {
          if (text().includes(expected)) resume(Effect.void)
        }
        res.on("data", check)
        check()
        return Effect.sync(() => res.off("data", check))
      })
  })))

const withServer = <A, E>(use: (port: number, hub: PubSub.PubSub<string>) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(Effect.gen(function*() {
    const hub = yield* makeViewHub()
    yield* PubSub.publish(hub, JSON.stringify({ view: 1 }))
    const server = yield* serveUi({ port: 0, token: TOKEN, views: hub })
    assert.strictEqual(server.url, `http://127.0.0.1:${server.port}/?token=${TOKEN}`)
    return yield* use(server.port, hub)
  }))

describe("ui server", () => {
  it.live("serves the page, its script and style with the token, behind a strict Content-Security-Policy and no-referrer", () =>
    withServer((port) =>
      Effect.gen(function*() {
        const page = yield* request(port, `/?token=${TOKEN}`)
        assert.strictEqual(page.status, 200)
        assert.match(String(page.headers["content-type"]), /^text\/html/)
        assert.include(page.body, `<script src="/app.js?token=${TOKEN}"`)
        assert.include(String(page.headers["content-security-policy"]), "default-src 'none'; script-src 'self'")
        assert.strictEqual(page.headers["referrer-policy"], "no-referrer")
        assert.strictEqual(page.headers["cache-control"], "no-store")
        const script = yield* request(port, `/app.js?token=${TOKEN}`)
        assert.strictEqual(script.status, 200)
        assert.include(script.body, "new EventSource")
        assert.strictEqual((yield* request(port, `/app.css?token=${TOKEN}`)).status, 200)
        assert.strictEqual((yield* request(port, `/nothing?token=${TOKEN}`)).status, 404)
      })
    ))

  it.live("streams the latest view at once as a server-sent event, and the next one when published", () =>
    withServer((port, hub) =>
      Effect.gen(function*() {
        const first = yield* request(port, `/events?token=${TOKEN}`, { firstEvent: true })
        assert.strictEqual(first.status, 200)
        assert.match(String(first.headers["content-type"]), /^text\/event-stream/)
        assert.strictEqual(first.body, `event: view\ndata: {"view":1}\n\n`)
        yield* PubSub.publish(hub, JSON.stringify({ view: 2 }))
        const second = yield* request(port, `/events?token=${TOKEN}`, { firstEvent: true })
        assert.strictEqual(second.body, `event: view\ndata: {"view":2}\n\n`)
        assert.strictEqual((yield* request(port, `/view.json?token=${TOKEN}`)).body, `{"view":2}`)
      })
    ))

  it.effect("keeps one stream open: each published view follows on it, and a comment line every 15 s of the clock", () =>
    withServer((port, hub) =>
      Effect.gen(function*() {
        const stream = yield* openStream(port, `/events?token=${TOKEN}`)
        yield* stream.received(`data: {"view":1}\n\n`)
        yield* PubSub.publish(hub, JSON.stringify({ view: 2 }))
        yield* stream.received(`data: {"view":2}\n\n`)
        assert.notInclude(stream.text(), "keep-alive")
        yield* TestClock.adjust("15 seconds")
        yield* stream.received(": keep-alive\n\n")
        assert.strictEqual(stream.text(), `event: view\ndata: {"view":1}\n\nevent: view\ndata: {"view":2}\n\n: keep-alive\n\n`)
      })
    ))

  it.live("refuses every path without the token, or with a wrong one, with 403 and no view", () =>
    withServer((port) =>
      Effect.gen(function*() {
        for (const path of ["/", "/app.js", "/events", "/view.json", "/?token=wrong", `/events?token=${TOKEN.slice(1)}`]) {
          const answer = yield* request(port, path)
          assert.strictEqual(answer.status, 403, path)
          assert.include(answer.body, "token", path)
          assert.notInclude(answer.body, "view", path)
        }
      })
    ))

  it.live("refuses a foreign Origin and a rebound Host with 403 even with the token; POST with 405, and with 403 without the token", () =>
    withServer((port) =>
      Effect.gen(function*() {
        const foreign = yield* request(port, `/events?token=${TOKEN}`, { headers: { origin: "http://evil.example" } })
        assert.strictEqual(foreign.status, 403)
        assert.include(foreign.body, "origin")
        const rebound = yield* request(port, `/view.json?token=${TOKEN}`, { headers: { host: `evil.example:${port}` } })
        assert.strictEqual(rebound.status, 403)
        assert.include(rebound.body, "Host")
        const same = yield* request(port, `/view.json?token=${TOKEN}`, { headers: { origin: `http://localhost:${port}`, host: `localhost:${port}` } })
        assert.strictEqual(same.status, 200)
        assert.strictEqual((yield* request(port, `/?token=${TOKEN}`, { method: "POST" })).status, 405)
        // Without the token a POST is refused like a GET: 403, the method not looked at.
        assert.strictEqual((yield* request(port, "/", { method: "POST" })).status, 403)
        assert.strictEqual((yield* request(port, "/events", { method: "DELETE" })).status, 403)
      })
    ))

  it.live("fails with a message naming the address and --port when the port is taken", () =>
    Effect.scoped(Effect.gen(function*() {
      const hub = yield* makeViewHub()
      const server = yield* serveUi({ port: 0, token: TOKEN, views: hub })
      const taken = yield* Effect.flip(serveUi({ port: server.port, token: TOKEN, views: hub }))
      assert.include(taken.message, `127.0.0.1:${server.port}`)
      assert.include(taken.message, "--port")
    })))
})
