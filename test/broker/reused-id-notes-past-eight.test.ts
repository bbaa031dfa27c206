/**
 * How many withdrawals a reused id can hold (ReusedIdWithdrawals.ts, docs/protocol.md): MAX_PER_KEY refuses every
 * send under it from the eighth on, but a message sent under it before then can still be withdrawn after it — here
 * one queued in the mailbox for each of 24 away sessions, then cancelled one by one, each cancel after sends of
 * other ids pushed the last cancelled one's record out (while kept, it makes a cancel again a repeat: review rvc2
 * probe 1; review rrn8 probe 2 expected at most MAX_PER_KEY notes) — so the id holds 24 notes, and the send after
 * them is refused. The clock does
 * not move; no sleep. The notes are read from the router's private state by narrowing (no cast).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures } from "../support/controlWorld.ts"
import { copyLeftWorld } from "../support/withdrawnCopyLeft.ts"

/** The field `name` of `from`, when `from` is an object. */
const field = (from: unknown, name: string): unknown => typeof from === "object" && from !== null ? Reflect.get(from, name) : undefined

describe("withdrawals under one reused id past MAX_PER_KEY", () => {
  it.effect("24 messages queued under m0 before any withdrawal, each cancelled: m0 holds 24 notes, and the next send under it is refused", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({ replayRecords: 3 })
      w.reg("t", { features: custodyFeatures, instanceId: "t-1" }, "T")
      const fill = (n: number) => {
        for (let k = 1; k <= 3; k++) w.send("t", message(`fill ${n}.${k}`))
      }
      const away = 24
      for (let n = 0; n < away; n++) w.closeAbandoned(w.reg(`z${n}`, {}, `Z${n}`))
      const m0: Message = { id: "m0", timestamp: 1, content: { text: "for t" } }
      w.send("t", m0)
      for (let n = 0; n < away; n++) {
        fill(n)
        w.send(`z${n}`, { ...m0, content: { text: `for z${n}` } })
      }
      // Each cancel after the last's record was pushed out: while it is kept (it says cancelled), a cancel again is a
      // repeat, answered from that fate, withdrawing nothing more (Cancels.ts; review rvc2 probe 1).
      for (let n = 0; n < away; n++) {
        w.cancel(m0.id)
        fill(away + 1 + n)
      }
      fill(away)
      w.send("t", { ...m0, content: { text: "for t again" } })
      const answers = w.framesOf(w.d).flatMap((f) => f.messageId === m0.id && (f.type === "delivered" || f.type === "delivery_failed") ? [`${f.type} ${f.code ?? f.delivery ?? ""}`] : [])
      const planned = ["delivered socket_delivered", ...Array.from({ length: away }, () => "delivered queued"), ...Array.from({ length: away }, () => "delivered ")]
      assert.deepStrictEqual(answers.slice(0, -1), planned, "the set-up's sends and cancels were not answered as planned")
      assert.strictEqual(answers.at(-1), "delivery_failed E_MESSAGE_ID_REUSE", "a send under m0 after its eighth withdrawal was taken")
      const table = field(field(field(field(field(w.router, "ctx"), "records"), "reusedIds"), "reused"), "table")
      if (!(table instanceof Map)) return assert.fail("the router's reused ids were not found: the test reads nothing")
      const counts = [...table.values()].map((aged) => field(field(aged, "value"), "notes")).map((notes) => Array.isArray(notes) ? notes.length : -1)
      assert.deepStrictEqual(counts, [away], "m0 does not hold one note for each of its 24 cancels")
    }), 60_000)
})
