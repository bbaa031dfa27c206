/**
 * An optional text parameter given as `""` is absent (`withoutEmptyText`,
 * applied where the session's tool takes its parameters): models fill
 * optional fields with `""`, and `reply` with `to: ""`, `send` with
 * `replyTo: ""` or `threadId: ""`, `publish` with `resource: ""` must do
 * what they do without them. A property over every optional text parameter
 * and the actions that send, reply, publish and read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import fc from "fast-check"
import { type IntercomToolParams, withoutEmptyText } from "../../src/session/toolParams.ts"
import { B, inboundMessage, withPeers } from "./support.ts"

/** Every optional text parameter of the tool (a field the Schema types as a string, but `action`). */
const TEXT_FIELDS = [
  "to",
  "message",
  "replyTo",
  "replyError",
  "scope",
  "group",
  "delivery",
  "queueMode",
  "threadId",
  "topic",
  "event",
  "resource",
  "ownership",
  "ref",
  "questionId",
  "run",
  "owner"
] as const

/** The calls the property starts from; `ask` puts an inbound ask from B in the turn first. */
const BASES: ReadonlyArray<{ readonly params: IntercomToolParams; readonly ask?: true }> = [
  { params: { action: "send", to: "B", message: "hi" } },
  { params: { action: "send", to: "B", message: "hi", delivery: "queue" } },
  { params: { action: "reply", message: "42" }, ask: true },
  { params: { action: "reply", replyError: "no quota" }, ask: true },
  { params: { action: "publish", topic: "t", message: "x" } },
  { params: { action: "subscribe", topic: "t" } },
  { params: { action: "topics" } },
  { params: { action: "list" } },
  { params: { action: "status" } },
  { params: { action: "pending" } }
]

type Outcome = Effect.Success<ReturnType<typeof outcome>>

/** What a call did: its result, and what reached the (fake) broker. */
const outcome = (params: IntercomToolParams, ask: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const { client, host, session } = yield* withPeers()
    if (ask) {
      yield* client.push(inboundMessage(B, "q-1", "what is 6 * 7?", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
    }
    const result = yield* session.intercom(params)
    return {
      text: result.text,
      isError: result.isError,
      sends: client.sends.map(({ message, ...request }) => ({
        ...request,
        message: { ...message, id: "(random)", timestamp: 0 }
      })),
      topicCalls: [...client.topicCalls]
    }
  }))

describe("an optional text parameter given as \"\" is absent", () => {
  it("withoutEmptyText leaves out exactly the empty optional text parameters", () => {
    const params: IntercomToolParams = { action: "", to: "", message: " ", replyTo: "", timeoutMs: 0, passive: false }
    assert.deepStrictEqual(withoutEmptyText(params), { action: "", message: " ", timeoutMs: 0, passive: false })
  })

  it.effect("property: any set of optional text parameters given as \"\" changes nothing a call does", () =>
    Effect.gen(function*() {
      // Sampled, then run here: under this test's TestClock, so ages in a list cannot differ between the two runs.
      const samples = fc.sample(fc.tuple(fc.constantFrom(...BASES), fc.subarray([...TEXT_FIELDS], { minLength: 1 })), 30)
      const plains = new Map<(typeof BASES)[number], Outcome>()
      for (const [base, fields] of samples) {
        const empty = Object.fromEntries(fields.filter((field) => !(field in base.params)).map((field) => [field, ""]))
        const plain = plains.get(base) ?? (yield* outcome(base.params, base.ask === true))
        plains.set(base, plain)
        const withEmpty = yield* outcome({ ...base.params, ...empty }, base.ask === true)
        assert.deepStrictEqual(withEmpty, plain, `${base.params.action} with ${JSON.stringify(empty)}`)
      }
    }))

  it.effect("each optional text parameter alone, on send, reply and publish (the calls the review saw fail)", () =>
    Effect.gen(function*() {
      for (const base of [BASES[0]!, BASES[2]!, BASES[4]!]) {
        const plain = yield* outcome(base.params, base.ask === true)
        for (const field of TEXT_FIELDS) {
          if (field in base.params) continue
          const withEmpty = yield* outcome({ ...base.params, [field]: "" }, base.ask === true)
          assert.deepStrictEqual(withEmpty, plain, `${base.params.action} with ${field}: ""`)
        }
      }
    }))
})
