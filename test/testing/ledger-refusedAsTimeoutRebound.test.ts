/**
 * The ledger's `refused-as-timeout` judges a refusal that ends the question, read before the ask ended
 * (review revap AP2): an E_TARGET_REBOUND read in time (the question is then sent again under its id)
 * followed by the resend's refusal read only after the ask ended is not reported. Before, the first
 * refusal's read time (the rebound's) was paired with the last refusal's code.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { Ledger } from "../../src/testing/Ledger.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (pid: number) => ({ cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const client = { key: "client-a", rejoinGraceMs: 10_000, livenessTimeoutMs: 5_000 }

describe("refused-as-timeout judges the refusal read before the ask ended", () => {
  it("a rebound read before the end and the resend's refusal read after it is not reported", () => {
    let now = 0
    const ledger = new Ledger({ now: () => now })
    ledger.addSession({ id: A, name: "a", scopeId: undefined })
    ledger.addSession({ id: D, name: "d", scopeId: undefined })
    ledger.linkOpened(1, A, "client-a", 1)
    ledger.linkOpened(2, D, "client-d", 1)
    for (const [link, id, pid] of [[1, A, 1], [2, D, 4]] as const) {
      ledger.brokerRead(link, [JSON.stringify({ type: "register", sessionId: id, session: info(pid) })])
      ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
    }
    now = 1_000
    const alias = ledger.askStarted(A, D, client)
    const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: 60_000 })
    ledger.clientWrote(1, [ask])
    ledger.brokerRead(1, [ask])
    const rebound = JSON.stringify({ type: "delivery_failed", messageId: question.id, code: DeliveryCode.TargetRebound, reason: "rebound" })
    ledger.brokerWrote(1, [rebound])
    now = 2_000
    ledger.clientRead(1, [rebound])
    // The question sent again under its id; the broker refuses it too, and that refusal is read only after the ask ended.
    ledger.clientWrote(1, [ask])
    ledger.brokerRead(1, [ask])
    const refusal = JSON.stringify({ type: "delivery_failed", messageId: question.id, code: DeliveryCode.MutualAsk, reason: "refused" })
    ledger.brokerWrote(1, [refusal])
    now = 13_000
    ledger.askEnded(alias, "ReplyTimeout")
    now = 14_000
    ledger.clientRead(1, [refusal])
    expect(ledger.refusedAsTimeout()).toEqual([])
  })
})
