/**
 * Who may read the `intercom ui` page (src/ui/Access.ts): the token, the
 * Host header (DNS rebinding), the Origin header, the method.
 */
import { assert, describe, it } from "@effect/vitest"
import { type AccessRequest, decide, makeToken } from "../../src/ui/Access.ts"

const PORT = 41234
const TOKEN = "k9y7wEw0pJ2bK3d4Yt2aQfW8oZpZ4vX1Nq3sR5tU6vA"

const request = (overrides: Partial<AccessRequest> & { readonly headers?: AccessRequest["headers"] } = {}): AccessRequest => ({
  method: "GET",
  url: `/events?token=${TOKEN}`,
  ...overrides,
  headers: { host: `127.0.0.1:${PORT}`, ...overrides.headers }
})

const decideFor = (r: AccessRequest) => decide(r, { port: PORT, token: TOKEN })

describe("ui access", () => {
  it("lets a GET with the token and this server's Host through, with its path", () => {
    assert.deepStrictEqual(decideFor(request()), { _tag: "Allowed", path: "/events" })
    assert.deepStrictEqual(decideFor(request({ headers: { host: `localhost:${PORT}` } })), { _tag: "Allowed", path: "/events" })
    assert.deepStrictEqual(
      decideFor(request({ headers: { origin: `http://127.0.0.1:${PORT}` } })),
      { _tag: "Allowed", path: "/events" }
    )
  })

  it("refuses a request without the token, or with a wrong or truncated one, with 403", () => {
    for (const url of ["/", "/events", `/?token=${TOKEN.slice(0, -1)}`, `/?token=${TOKEN}x`, "/?token=", `/?tok=${TOKEN}`]) {
      const decision = decideFor(request({ url }))
      assert.strictEqual(decision._tag, "Refused", url)
      if (decision._tag === "Refused") {
        assert.strictEqual(decision.status, 403)
        assert.include(decision.reason, "token")
        assert.notInclude(decision.reason, TOKEN)
      }
    }
  })

  it("refuses another Host (a rebound DNS name), another port, or none, even with the token", () => {
    for (const host of ["evil.example:41234", `127.0.0.1:${PORT + 1}`, "127.0.0.1", undefined]) {
      const decision = decideFor(request({ headers: { host } }))
      assert.deepInclude(decision, { _tag: "Refused", status: 403 }, String(host))
    }
  })

  it("refuses a foreign Origin, even with the token and the right Host", () => {
    for (const origin of ["http://evil.example", `https://127.0.0.1:${PORT}`, `http://127.0.0.1:${PORT + 1}`, "null"]) {
      const decision = decideFor(request({ headers: { origin } }))
      assert.deepInclude(decision, { _tag: "Refused", status: 403 }, origin)
      if (decision._tag === "Refused") assert.include(decision.reason, "origin")
    }
  })

  it("refuses a method other than GET and HEAD with 405", () => {
    assert.deepInclude(decideFor(request({ method: "POST" })), { _tag: "Refused", status: 405 })
    assert.deepInclude(decideFor(request({ method: "HEAD" })), { _tag: "Allowed" })
  })

  it("refuses any method without the token with 403, not 405: the token is checked first (docs/ui.md)", () => {
    for (const method of ["POST", "PUT", "DELETE", "OPTIONS"]) {
      for (const url of ["/", "/events", `/?token=${TOKEN}x`]) {
        const decision = decideFor(request({ method, url }))
        assert.deepInclude(decision, { _tag: "Refused", status: 403 }, `${method} ${url}`)
        if (decision._tag === "Refused") assert.include(decision.reason, "token")
      }
    }
  })

  it("makes tokens of 256 random bits, base64url, different each time", () => {
    const tokens = new Set(Array.from({ length: 100 }, makeToken))
    assert.strictEqual(tokens.size, 100)
    for (const token of tokens) assert.match(token, /^[A-Za-z0-9_-]{43}$/)
  })
})
