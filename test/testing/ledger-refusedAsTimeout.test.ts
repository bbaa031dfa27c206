/**
 * The ledger's `refused-as-timeout` check (`refusedAsTimeout`,
 * ledger/asks.ts), fed by hand: A asks D; the broker refuses the question
 * and A's client reads the refusal (after its send timeout). Reported when
 * the ask then ends `ReplyTimeout`; not when it ends with the refusal
 * (`NotDelivered`), when the refusal is read only after the ask ended, or
 * when it is `E_TARGET_REBOUND` (the question is sent again).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import type { AskOutcome } from "../../src/testing/ledger/types.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const client = { key: "client-a", rejoinGraceMs: 10_000, livenessTimeoutMs: 5_000 }

/** A's ask refused with `code`, the refusal read before (or after) the ask ends with `outcome`. */
const refusedThenEnded = (code: string, outcome: AskOutcome, refusalRead: "before" | "after"): ReadonlyArray<string> => {
  let now = 0
  const ledger = new Ledger({ now: () => now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 1)
  ledger.linkOpened(2, D, "client-d", 1)
  for (const [link, id, pid] of [[1, A, 1], [2, D, 4]] as const) {
    const { id: _, ...session } = info(id, pid)
    ledger.brokerRead(link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  now = 1_000
  const alias = ledger.askStarted(A, D, client)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: 60_000 })
  ledger.clientWrote(1, [ask])
  ledger.brokerRead(1, [ask])
  const refusal = JSON.stringify({ type: "delivery_failed", messageId: question.id, code, reason: "refused" })
  ledger.brokerWrote(1, [refusal])
  // Read behind the held writes, after A's send timeout.
  now = 12_000
  if (refusalRead === "before") ledger.clientRead(1, [refusal])
  now = 13_000
  ledger.askEnded(alias, outcome)
  now = 14_000
  if (refusalRead === "after") ledger.clientRead(1, [refusal])
  return ledger.refusedAsTimeout()
}

describe("Ledger: an ask that ended ReplyTimeout with its question's refusal read (refused-as-timeout)", () => {
  it("an ask ended ReplyTimeout after its client read the broker's refusal of its question is reported", () => {
    const found = refusedThenEnded("E_MUTUAL_ASK", "ReplyTimeout", "before")
    expect(found).toHaveLength(1)
    expect(found[0]).toContain("ask1 of a ended ReplyTimeout")
    expect(found[0]).toContain("E_MUTUAL_ASK")
  })

  it("the same ask ended NotDelivered is not reported", () => {
    expect(refusedThenEnded("E_MUTUAL_ASK", "NotDelivered", "before")).toEqual([])
  })

  it("a refusal read only after the ask ended is not reported", () => {
    expect(refusedThenEnded("E_MUTUAL_ASK", "ReplyTimeout", "after")).toEqual([])
  })

  it("an E_TARGET_REBOUND refusal (the question sent again) is not reported", () => {
    expect(refusedThenEnded("E_TARGET_REBOUND", "ReplyTimeout", "before")).toEqual([])
  })
})
