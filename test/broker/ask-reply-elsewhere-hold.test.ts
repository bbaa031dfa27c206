/**
 * `reply-elsewhere-v1` during a takeover's custody hold (AnsweredAsks.ts):
 * the reply was written to the session's `received-v1` connection and never
 * confirmed, and another client instance takes the session over. Until the
 * old connection closes the reply stays in its custody, and at that close it
 * comes back to the new connection — so a resend of the ask on the new
 * connection meanwhile must not be told the reply went elsewhere, though the
 * reply's route still names the old instance. Driven by hand: writes
 * complete at once, and each close is the test's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import { ASK_TIMEOUT_V1, RECEIVED_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const FEATURES = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1]
const TIMEOUT_MS = 60_000

/** `reply:<id>` for a message that is a reply, `elsewhere:<replyId>` for `ask_answered_elsewhere`; other frames left out. */
const labelsOf = (frames: ReadonlyArray<OutFrame>): Array<string> =>
  frames.flatMap((frame) => {
    const parsed = parseFrameText(frameText(frame))
    if (isFrameDecodeError(parsed)) return []
    if (parsed.type === "ask_answered_elsewhere") return [`elsewhere:${String(parsed.replyId)}`]
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

describe("reply-elsewhere-v1: a reply in a taken-over connection's custody", () => {
  it.effect("a resend on the new connection while the hold waits is not told elsewhere; the reply comes back to it at the old close", () =>
    Effect.gen(function*() {
      const { attach, batch, close, router } = yield* handRouter({})
      const oldSeen: Array<string> = []
      const old = attach(noting(1, oldSeen))
      batch(old, [registerFrame({ sessionId: "a", frame: { features: FEATURES, instanceId: "a-1" } })])
      const target = attach(fakeConnection(2, false))
      batch(target, [registerFrame({ sessionId: "t" })])
      const question = message("well?", { expectsReply: true })
      batch(old, [{ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS }])
      const reply = message("the answer", { replyTo: question.id })
      batch(target, [{ type: "send", to: "a", message: reply }])
      assert.deepStrictEqual(oldSeen, [`reply:${reply.id}`], "the reply was not written to the old connection: the test sets up nothing")
      assert.strictEqual(old.custody?.size, 1, "the reply is not in the old connection's custody: the test sets up nothing")

      const seen: Array<string> = []
      /** What `fresh` has queued, written now (a hand-driven writer runs only when told). */
      const flush = (): void => {
        seen.push(...labelsOf(router.output.writes.takeForWrite(fresh).frames))
      }
      const fresh = attach(noting(3, seen))
      batch(fresh, [registerFrame({ sessionId: "a", frame: { features: FEATURES, instanceId: "a-2" } })])
      assert.isAbove(fresh.custodyHolds, 0, "the takeover took no custody hold: the test sets up nothing")
      batch(fresh, [{ type: "send", to: "t", message: question, askTimeoutMs: TIMEOUT_MS }])
      flush()
      assert.deepStrictEqual(seen, [], "told elsewhere (or written the reply) while the hold waits")
      close(old)
      flush()
      assert.deepStrictEqual(seen, [`reply:${reply.id}`], "the reply did not come back to the new connection at the old close")
    }))
})
