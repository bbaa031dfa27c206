/**
 * The watch's control socket (src/cli/client/control.ts): a command's tool
 * parameters reach the watch whole — every field of their one Schema
 * (src/session/toolParams.ts), none dropped — and a frame with a field the
 * tool does not have, or of the wrong shape, is refused with the field named.
 * Real Unix sockets; the process-level counterpart is
 * test/cli-client/watch-delegation.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, Queue } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { decodeRequest, delegate, encodeRequest, serveControl } from "../../src/cli/client/control.ts"
import type { IntercomToolParams, ToolResult } from "../../src/session/IntercomSession.ts"
import { dialUnix } from "../../src/transport/UnixSocket.ts"

type Optional = Exclude<keyof IntercomToolParams, "action">

const text = fc.string({ unit: "binary", maxLength: 12 })
/** Finite numbers; not -0, which JSON writes as 0 (the same parameter). */
const finite = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0))

/** Any JSON value (parsed back, so a -0 is written as the 0 JSON carries). */
const json = fc.json({ maxDepth: 2 }).map((source): unknown => JSON.parse(source))

const maybe = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: undefined })

/**
 * Every optional parameter: absent (`undefined`) or any value. Typed over the parameters' keys, so a
 * parameter added to the Schema without an entry here does not compile.
 */
const OPTIONAL: { readonly [K in Optional]-?: fc.Arbitrary<IntercomToolParams[K]> } = {
  to: maybe(text),
  message: maybe(text),
  attachments: maybe(json),
  replyTo: maybe(text),
  replyError: maybe(text),
  timeoutMs: maybe(finite),
  scope: maybe(text),
  group: maybe(text),
  delivery: maybe(text),
  queueMode: maybe(text),
  threadId: maybe(text),
  passive: maybe(fc.boolean()),
  topic: maybe(text),
  event: maybe(text),
  resource: maybe(text),
  ownership: maybe(text),
  awaitRelease: maybe(fc.boolean()),
  ref: maybe(text),
  questionId: maybe(text),
  run: maybe(text),
  offset: maybe(finite),
  limit: maybe(finite),
  owner: maybe(text)
}

/** Any parameters: each optional one left out, set, or present as `undefined`. */
const anyParams: fc.Arbitrary<IntercomToolParams> = fc.record({ action: text, ...OPTIONAL }, { requiredKeys: ["action"] })

/** What arrives: the same parameters, without those present as `undefined` (JSON has no `undefined`). */
const withoutUndefined = (params: IntercomToolParams): Readonly<Record<string, unknown>> =>
  Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined))

const OK: ToolResult = { text: "ok", isError: false, details: {} }

/**
 * A control socket in a fresh private dir whose `run` hands each request's
 * parameters to the returned queue; the dir is removed when the Scope closes.
 */
const serving = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "eictl-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const received = yield* Queue.unbounded<IntercomToolParams>()
  const socketPath = path.join(dir, "cli", "w.sock")
  yield* serveControl(
    { socketPath, dir: path.join(dir, "cli"), fallback: false },
    "w",
    (params) => Effect.as(Queue.offer(received, params), OK)
  )
  return { socketPath, received }
})

describe("watch control frames", () => {
  it.live("property: any parameters a command hands to the watch arrive there whole", () =>
    Effect.gen(function*() {
      const { socketPath, received } = yield* serving
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(anyParams, (params) =>
            Effect.runPromise(Effect.gen(function*() {
              const result = yield* delegate(socketPath, "w", params)
              assert.deepStrictEqual(result, Option.some(OK))
              assert.deepStrictEqual(yield* Queue.take(received), withoutUndefined(params))
            }))),
          { numRuns: 60 }
        )
      )
    }), 30_000)

  it.effect("property: encoding then decoding gives back the parameters", () =>
    Effect.promise(() =>
      fc.assert(fc.asyncProperty(anyParams, (params) =>
        Effect.runPromise(Effect.gen(function*() {
          const frame = yield* encodeRequest(params)
          assert.deepStrictEqual(yield* decodeRequest(frame), withoutUndefined(params))
        }))), { numRuns: 300 })
    ))

  it.effect("a field the tool does not have, or of the wrong shape, is refused with each one named", () =>
    Effect.gen(function*() {
      const unknown = yield* Effect.flip(decodeRequest(JSON.stringify({ type: "intercom", action: "send", deliveryMode: "passive" })))
      assert.deepStrictEqual(unknown.problems, ["deliveryMode: Expected no excess property"])
      assert.include(unknown.message, "Invalid control request: deliveryMode: Expected no excess property. Nothing was run.")
      const wrong = yield* Effect.flip(decodeRequest(JSON.stringify({ type: "intercom", action: "send", passive: "yes", limit: "3" })))
      assert.strictEqual(wrong.problems.length, 2)
      assert.match(wrong.problems[0] ?? "", /^passive: /)
      assert.match(wrong.problems[1] ?? "", /^limit: /)
    }))

  it.live("the watch answers a frame with an unknown field with that error and runs nothing", () =>
    Effect.gen(function*() {
      const { socketPath, received } = yield* serving
      const answer = yield* Effect.scoped(Effect.gen(function*() {
        const connection = yield* dialUnix(socketPath)
        yield* connection.writeAll([JSON.stringify({ type: "intercom", action: "send", to: "x", message: "m", bogus: 1 })])
        return yield* connection.read
      }))
      const response: unknown = JSON.parse(answer[0] ?? "")
      assert.deepInclude(response, { type: "result", isError: true })
      assert.include(JSON.stringify(response), "bogus: Expected no excess property")
      // A valid request after it is the first thing the watch ran.
      yield* delegate(socketPath, "w", { action: "status" })
      assert.deepStrictEqual(yield* Queue.take(received), { action: "status" })
    }))

  it.live("a number JSON cannot carry fails before anything is sent, naming the field", () =>
    Effect.gen(function*() {
      const { socketPath, received } = yield* serving
      const exit = yield* Effect.exit(delegate(socketPath, "w", { action: "ask", to: "x", message: "m", timeoutMs: Number.NaN }))
      assert.isTrue(Exit.isFailure(exit))
      const failed = yield* Effect.flip(delegate(socketPath, "w", { action: "ask", timeoutMs: Number.POSITIVE_INFINITY }))
      assert.strictEqual(failed._tag, "InvalidControlRequest")
      assert.include(failed.message, "timeoutMs")
      assert.strictEqual(yield* Queue.size(received), 0)
    }))

  it.live.skipIf(process.getuid?.() !== 0)("a control socket, or its directory, of another user gets nothing (chown: root only)", () =>
    Effect.gen(function*() {
      const { socketPath, received } = yield* serving
      for (const given of [path.dirname(path.dirname(socketPath)), path.dirname(socketPath), socketPath]) {
        fs.lchownSync(given, 4242, 4242)
        const failed = yield* Effect.flip(delegate(socketPath, "w", { action: "status" }))
        assert.strictEqual(failed._tag, "ControlSocketForeign")
        assert.include(failed.message, `${given} is owned by uid 4242, not by this user (uid 0)`)
        fs.lchownSync(given, 0, 0)
      }
      assert.strictEqual(yield* Queue.size(received), 0, "nothing reached the listener")
      assert.isTrue(Option.isSome(yield* delegate(socketPath, "w", { action: "status" })), "its own user's watch is used")
    }))
})
