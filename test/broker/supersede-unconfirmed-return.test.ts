/**
 * What the broker gives a receiver's next registration after its last connection read a message m2 and then its
 * supersede and the new message m3, confirming none of them, and ended (a close or an `unregister`; helper
 * sim7022). The receiver's session may have checkpointed m2 in its host's journal and restores it on return: the
 * only sign it has that m2 was replaced is what comes here. For a `received-v1` client: m3 alone, still naming m2
 * in `supersedes` — neither m2 (given back unconfirmed, it is not queued again: its route says superseded) nor the
 * supersede control (dropped with its message given back, docs/protocol.md), whichever instance registers. A base
 * client was given all three at their write, so nothing comes back. The session's side of it:
 * test/session/supersedesRestored.test.ts.
 *
 * On a Router driven by hand (controlWorld): writes complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { baseFeatures, controlWorld as world, custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"

const RETENTION_MS = 3_600_000

/** b-1 is written m2, then d supersedes it by m3 (control and m3 written to b-1), and b-1 ends (`end`) unconfirmed. */
const supersededUnconfirmed = (features: ReadonlyArray<string>, end: "close" | "unregister") =>
  Effect.gen(function*() {
    const w = yield* world(features, { mailboxRetention: RETENTION_MS })
    const m2 = message("m2")
    const m3 = message("m3")
    w.batch(w.d, [{ type: "send", to: "b", message: m2 }])
    w.batch(w.d, [{ type: "send", to: "b", message: { ...m3, supersedes: m2.id } }])
    assert.deepStrictEqual(
      messagesAndControls(w.framesOf(w.b1)),
      [`message ${m2.id}`, `supersede ${m2.id}`, `message ${m3.id}`],
      "setup: b-1 was not written m2, its supersede and m3"
    )
    assert.deepStrictEqual(w.answersOf(m3.id), ["delivered"], "setup: the supersede was not accepted")
    if (end === "close") w.closeAbandoned(w.b1)
    else w.batch(w.b1, [{ type: "unregister" }])
    return { w, m2, m3 }
  })

/** The messages (with the id each names in `supersedes`) and controls `peer` was written. */
const seen = (w: Effect.Success<ReturnType<typeof world>>, peer: Parameters<typeof w.framesOf>[0]) =>
  w.framesOf(peer).flatMap((frame) =>
    frame.type === "message"
      ? [`message ${frame.message?.id}${frame.message?.supersedes === undefined ? "" : ` supersedes ${frame.message.supersedes}`}`]
      : frame.type === "message_control"
      ? [`${frame.control?.action} ${frame.control?.messageId}`]
      : []
  )

describe("a received-v1 reader of a message and its supersede ends unconfirmed, and the session registers again", () => {
  for (const end of ["close", "unregister"] as const) {
    it.effect(`after its ${end}, the same instance: m3 alone, naming m2 — no supersede control, no m2`, () =>
      Effect.gen(function*() {
        const { m2, m3, w } = yield* supersededUnconfirmed(custodyFeatures, end)
        const back = w.registerB("b-1")
        assert.deepStrictEqual(seen(w, back), [`message ${m3.id} supersedes ${m2.id}`])
      }))

    it.effect(`after its ${end}, another instance: m3 alone, naming m2`, () =>
      Effect.gen(function*() {
        const { m2, m3, w } = yield* supersededUnconfirmed(custodyFeatures, end)
        const other = w.registerB("b-2")
        assert.deepStrictEqual(seen(w, other), [`message ${m3.id} supersedes ${m2.id}`])
      }))
  }
})

describe("a base reader of a message and its supersede ends, and the session registers again", () => {
  it.effect("a base client's return: nothing — the three were delivered as they were written", () =>
    Effect.gen(function*() {
      const { w } = yield* supersededUnconfirmed(baseFeatures, "close")
      const back = w.registerB(undefined, baseFeatures)
      assert.deepStrictEqual(seen(w, back), [])
    }))
})
