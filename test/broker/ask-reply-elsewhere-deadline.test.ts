/**
 * `reply-elsewhere-v1` at a registration, against the ask's deadline
 * (AnsweredAsks.elsewhereOnReturn): a-1 asks `t` and leaves; a base client
 * holds `a` and is written `t`'s reply (its write is the delivery); a-1
 * registers again. Before the ask edge's deadline it is told
 * `ask_answered_elsewhere`; past it no asker waits any more, and it is told
 * nothing. Driven by hand on a clock the test sets: writes complete at once,
 * and each close is the test's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import { ASK_TIMEOUT_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const FEATURES = [REJOIN_V1, TAKEOVER_V1, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 60_000
const START = 1_000_000

/** `reply:<id>` for a message that is a reply, `elsewhere:<messageId>:<replyId>` for `ask_answered_elsewhere`. */
const labelsOf = (frames: ReadonlyArray<OutFrame>): Array<string> =>
  frames.flatMap((frame) => {
    const parsed = parseFrameText(frameText(frame))
    if (isFrameDecodeError(parsed)) return []
    if (parsed.type === "ask_answered_elsewhere") return [`elsewhere:${String(parsed.messageId)}:${String(parsed.replyId)}`]
    const inner = parsed.message
    if (parsed.type !== "message" || typeof inner !== "object" || inner === null || !("replyTo" in inner)) return []
    return "id" in inner ? [`reply:${String(inner.id)}`] : []
  })

/** A connection whose writes complete at once, noting their labels in `seen`. */
const noting = (id: number, seen: Array<string>): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    seen.push(...labelsOf(frames))
    return undefined
  }
})

/** a-1 asks, leaves; a base client is written the reply; a-1 registers again at `returnAt`: what it is written. */
const returningAt = (returnAt: number) =>
  Effect.gen(function*() {
    let now = START
    const { attach, batch, close, router } = yield* handRouter({}, () => now)
    /** What `peer` has queued, written now (a hand-driven writer runs only when told), added to `seen`. */
    const flush = (peer: Parameters<typeof close>[0], seen: Array<string>): Array<string> => {
      seen.push(...labelsOf(router.output.writes.takeForWrite(peer).frames))
      return seen
    }
    const asker = attach(fakeConnection(1, false))
    batch(asker, [registerFrame({ sessionId: "a", frame: { features: FEATURES, instanceId: "a-1" } })])
    const target = attach(fakeConnection(2, false))
    batch(target, [registerFrame({ sessionId: "t" })])
    const question = message("well?", { expectsReply: true })
    batch(asker, [{ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS }])
    close(asker)
    const otherSeen: Array<string> = []
    const other = attach(noting(3, otherSeen))
    batch(other, [registerFrame({ sessionId: "a", frame: { instanceId: "other" } })])
    const reply = message("the answer", { replyTo: question.id })
    batch(target, [{ type: "send", to: "a", message: reply }])
    assert.include(flush(other, otherSeen), `reply:${reply.id}`, "the other client was not written the reply: the test sets up nothing")
    close(other)
    now = returnAt
    const seen: Array<string> = []
    const back = attach(noting(4, seen))
    batch(back, [registerFrame({ sessionId: "a", frame: { features: FEATURES, instanceId: "a-1" } })])
    return { seen: flush(back, seen), notice: `elsewhere:${question.id}:${reply.id}` }
  })

describe("reply-elsewhere-v1 at a registration: only while the ask's edge was to last", () => {
  it.effect("a return before the ask's deadline is told", () =>
    Effect.gen(function*() {
      const { notice, seen } = yield* returningAt(START + TIMEOUT_MS - 1)
      assert.deepStrictEqual(seen, [notice])
    }))

  it.effect("a return at or past the ask's deadline is told nothing (no asker waits)", () =>
    Effect.gen(function*() {
      const { seen } = yield* returningAt(START + TIMEOUT_MS)
      assert.deepStrictEqual(seen, [])
    }))
})
