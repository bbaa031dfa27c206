/**
 * The ledger's `withdrawn` excuse for a question acknowledged
 * `socket_delivered` and never written (ledger/fates.ts, `wentBack`), fed by
 * hand: D asks B, the broker acknowledges the question, then writes a later
 * message to B's connection #2, which ends (B killed) before D's wait ends
 * (`ReplyPeerDisconnected`, its `cancel_ask` after it) and the replay record
 * still says `delivered`. Only a later message of the question's own sender
 * proves the question had left #2's outbox: the broker keeps each sender's
 * order, but not the order between senders — a question parked on its
 * sender's reader behind that sender's mail to a full outbox (Output.ts) is
 * passed by another sender's message that goes straight into the outbox,
 * and is given back, unwritten, when #2 ends (`--parked-flush --unregister
 * --delivery` seed 53143).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const later: Message = { id: "m-0002", timestamp: 0, content: { text: "later" } }

/**
 * D asks B (links: #1 D's, #2 B's, #3 A's); after D read the question's
 * `socket_delivered`, `laterFrom` sends B `later`, which the broker reads and
 * writes to #2, where B's client reads it. Then #2 ends with B's client, D's
 * ask ends `ReplyPeerDisconnected`, and B registers again on #4. Every
 * message the finish asks the replay record about is answered `delivered`.
 */
const parkedQuestion = (laterFrom: string) => {
  let now = 0
  const ledger = new Ledger({ now: () => now, strictInFlight: true })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  const register = (link: number, id: string, client: string, pid: number) => {
    ledger.linkOpened(link, id, client, 1)
    const { id: _, ...session } = info(id, pid)
    brokerTook(ledger, link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  register(1, D, "client-d", 4)
  register(2, B, "client-b", 2)
  register(3, A, "client-a", 1)
  now = 1_000
  const ask = ledger.askStarted(D, B)
  const asked = JSON.stringify({ type: "send", to: B, message: question })
  ledger.clientWrote(1, [asked])
  brokerTook(ledger, 1, [asked])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  now = 2_000
  const link = laterFrom === D ? 1 : 3
  const sent = JSON.stringify({ type: "send", to: B, message: later })
  ledger.clientWrote(link, [sent])
  brokerTook(ledger, link, [sent])
  const written = JSON.stringify({ type: "message", from: info(laterFrom, laterFrom === D ? 4 : 1), message: later })
  ledger.brokerWrote(2, [written])
  ledger.clientRead(2, [written])
  ledger.hostDelivered(B, laterFrom, later, "steer")
  ledger.clientRead(link, [JSON.stringify({ type: "delivered", messageId: later.id, delivery: "socket_delivered" })])
  now = 3_000
  ledger.brokerEnded(2)
  ledger.linkClosed(2)
  ledger.clientClosed("client-b")
  now = 3_100
  ledger.askEnded(ask, "ReplyPeerDisconnected")
  register(4, B, "client-b2", 2)
  for (const lost of ledger.unexplained()) ledger.recordSaid(lost.message.id, "delivered")
  const tally = ledger.finish()
  return { kinds: ledger.violations.map((violation) => violation.kind), withdrawn: tally.withdrawn }
}

describe("Ledger: a question acknowledged socket_delivered, never written, whose target's connection ended", () => {
  it("passed there only by another sender's later message: it may have been parked on its sender's reader, and went back (withdrawn)", () => {
    expect(parkedQuestion(A)).toEqual({ kinds: [], withdrawn: 1 })
  })

  it("passed there by its own sender's later message: it had left that outbox, and was lost (silent-loss)", () => {
    expect(parkedQuestion(D)).toEqual({ kinds: ["silent-loss"], withdrawn: 0 })
  })
})
