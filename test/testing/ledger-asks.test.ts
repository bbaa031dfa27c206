/**
 * The ledger's `ask-hijacked` check (hostile sweeps, ledger/wire.ts) on its
 * own, fed by hand: a reply refused as matching no pending ask while its ask
 * is unsettled is a violation only when the broker read the reply before the
 * ask's edge expired — `brokerReceivedAt + askTimeoutMs` of the question its
 * target read (docs/protocol.md, `ask-timeout-v1`). The asker's own wait counts
 * from the acknowledgement, read later, so it may still wait when a reply the
 * replier's stalled reader held back reaches the broker (hostile seed 4882).
 *
 * And its `answer-after-timeout` check: an ask that ended in a timeout
 * though the broker accepted its target's reply to it — unless its asker
 * did not hear the broker at its own deadline: it had no connection then
 * (even if one it made before its wait ended brings the reply), or its round
 * trip then was not answered because its client did not read what the broker
 * wrote; it gives up by design. A broker that wrote nothing more to a reading
 * asker is not excused. Nor is an asker whose client gave up with no
 * connection while it still owed the wait a next one (within its rejoin
 * grace of the deadline, before a settling round trip could time out) and
 * then read the reply on one within that grace (`AskRecord.owedWait`).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const D = "sim-4-d"
const info = (id: string, pid: number) => ({ id, cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const RECEIVED_AT = 1_000
const TIMEOUT_MS = 10_000
const question: Message = { id: "m-0001", timestamp: 0, content: { text: "question" }, expectsReply: true }
const reply: Message = { id: "m-0002", timestamp: 0, content: { text: "answer" }, replyTo: question.id }

/**
 * A asks D (link #1 is A's, #2 is D's); the broker reads the question at
 * RECEIVED_AT, D reads it with TIMEOUT_MS, A reads its acknowledgement. D's
 * reply is read by the broker at `replyReadAt`, and refused as matching no
 * pending ask; A's ask has not settled. Returns the violations' kinds.
 */
const refusedReplyReadAt = (replyReadAt: number): ReadonlyArray<string> => {
  let now = 0
  const ledger = new Ledger({ now: () => now, hostileChecks: true })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 1)
  ledger.linkOpened(2, D, "client-d", 1)
  for (const [link, id, pid] of [[1, A, 1], [2, D, 4]] as const) {
    const { id: _, ...session } = info(id, pid)
    brokerTook(ledger, link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  now = RECEIVED_AT
  ledger.askStarted(A, D)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: TIMEOUT_MS })
  ledger.clientWrote(1, [ask])
  brokerTook(ledger, 1, [ask])
  ledger.clientRead(2, [JSON.stringify({
    type: "message",
    from: info(A, 1),
    message: { ...question, brokerReceivedAt: RECEIVED_AT, brokerDeliveredAt: RECEIVED_AT },
    askTimeoutMs: TIMEOUT_MS
  })])
  now = RECEIVED_AT + 15
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  now = RECEIVED_AT + 5_000
  ledger.clientWrote(2, [answer])
  now = replyReadAt
  brokerTook(ledger, 2, [answer])
  ledger.clientRead(2, [JSON.stringify({
    type: "delivery_failed",
    messageId: reply.id,
    reason: "Reply target does not match a pending ask",
    delivery: "failed",
    code: "E_REPLY_TARGET",
    retryable: false,
    outcomeKnown: true
  })])
  return ledger.violations.map((violation) => violation.kind)
}

describe("Ledger: a reply refused as matching no pending ask (ask-hijacked)", () => {
  it("a reply the broker read before the ask's deadline, refused while the ask is unsettled, is ask-hijacked", () => {
    expect(refusedReplyReadAt(RECEIVED_AT + TIMEOUT_MS - 1)).toEqual(["ask-hijacked"])
  })

  it("a reply the broker read at or after the ask's deadline is no violation, though the asker still waits", () => {
    expect(refusedReplyReadAt(RECEIVED_AT + TIMEOUT_MS)).toEqual([])
    expect(refusedReplyReadAt(RECEIVED_AT + TIMEOUT_MS + 5)).toEqual([])
  })
})

/**
 * A asks D, D's reply is read by the broker and acknowledged to D
 * (`delivered`), and A's ask ends with `outcome`. Returns what
 * `answersAfterTimeout` reports.
 */
const acceptedReplyThenAskEnded = (
  outcome: "ReplyTimeout" | "Replied",
  asker:
    | "heard"
    | "told before its deadline"
    | "disconnected"
    | "reconnected after its deadline"
    | "not reading"
    | "broker silent"
    | "broker silent, reply after the wait"
    | "other frame read, reply never"
    | "slow write"
    | "other frame read, reply unread behind it"
    | "settle held"
    | "settle answered" = "heard"
): ReadonlyArray<string> => {
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
  now = RECEIVED_AT
  const alias = ledger.askStarted(A, D)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: TIMEOUT_MS })
  ledger.clientWrote(1, [ask])
  ledger.brokerRead(1, [ask])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  now = RECEIVED_AT + TIMEOUT_MS - 1
  ledger.clientWrote(2, [answer])
  ledger.brokerRead(2, [answer])
  ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
  // The broker writes D's reply to A — unless it is silent (it keeps the reply (and, behind it, the answer to
  // A's round trip at its deadline) while A's client reads on, review revled) or the reply is still parked behind D's mail to a slow reader.
  const replyFrame = JSON.stringify({ type: "message", from: info(D, 4), message: reply })
  const parked = asker === "settle held" || asker === "settle answered"
  const silent = parked || asker === "broker silent" || asker === "broker silent, reply after the wait" || asker === "other frame read, reply never" ||
    asker === "other frame read, reply unread behind it"
  if (!silent && asker !== "slow write") ledger.brokerWrote(1, [replyFrame])
  // A slow write: the broker began writing the reply, the transport has not taken it when A's wait ends.
  if (asker === "slow write") ledger.brokerWriteStarted(1, [replyFrame])
  // A's deadline: its acknowledgement read at RECEIVED_AT, plus TIMEOUT_MS. Its round trip then (a `list`)
  // is answered behind the reply; `roundTrip` writes the answer on `link` and has A read it.
  const deadline = RECEIVED_AT + TIMEOUT_MS
  const answered = JSON.stringify({ type: "sessions", requestId: "probe", sessions: [] })
  const roundTrip = (link: number) => {
    ledger.brokerWrote(link, [answered])
    ledger.clientRead(link, [answered])
  }
  now = deadline + 15
  // Heard: A's round trip came back on the connection it had at its deadline, behind the reply (which it
  // read, and refused).
  if (asker === "heard") {
    ledger.clientRead(1, [replyFrame])
    roundTrip(1)
  }
  if (asker === "reconnected after its deadline") {
    // The asker's connection closed before its deadline (the reply unread in it); a new one registers
    // after the deadline, while its `cancel_ask` waits for a connection (seed 8569, --delivery), and A
    // reads on it.
    ledger.linkClosed(1)
    now = deadline + 22
    ledger.linkOpened(3, A, "client-a", 1)
    const { id: _, ...session } = info(A, 1)
    ledger.brokerRead(3, [JSON.stringify({ type: "register", sessionId: A, session })])
    const registered = JSON.stringify({ type: "registered", sessionId: A })
    ledger.brokerWrote(3, [registered])
    ledger.clientRead(3, [registered])
    roundTrip(3)
  }
  if (asker === "other frame read, reply never" || asker === "other frame read, reply unread behind it") {
    // A presence frame written after the deadline, which A reads; the reply and the round trip's answer never.
    const joined = JSON.stringify({ type: "session_joined", session: info(D, 4) })
    ledger.brokerWrote(1, [joined])
    ledger.clientRead(1, [joined])
  }
  // The reply comes after that frame (held-return seed 10414: queued behind others, slow writes); A has not
  // read it when its wait ends.
  if (asker === "other frame read, reply unread behind it") ledger.brokerWrote(1, [replyFrame])
  // A's settling `list` (ask-expiry-v1) at its deadline. Held: the broker holds its answer while the reply
  // is parked (ParkedReplies.ts), and answers A's liveness probe, written after it, at once (seed 10003,
  // --settle-hold --client-timings): A reads that, not the settle's answer, and gives up at its liveness
  // timeout. Answered: A reads the settle's answer, the reply not come — what a broker that did not hold it
  // would do.
  if (parked) {
    ledger.clientWrote(1, [JSON.stringify({ type: "list", requestId: "settle", limit: 1, settle: true })])
    if (asker === "settle answered") {
      const settled = JSON.stringify({ type: "sessions", requestId: "settle", sessions: [] })
      ledger.brokerWrote(1, [settled])
      ledger.clientRead(1, [settled])
    }
    roundTrip(1)
  }
  // Not reading: A's connection stays up but its client reads nothing more (seed 9129, --parked-flush
  // --client-timings): its round trip goes unanswered within its liveness timeout.
  // Told before its deadline: the wait ended on the broker's `ask_expired`, before its own deadline.
  now = asker === "told before its deadline" ? deadline - 1 : deadline + 40
  // The asker's connection closed before its wait ended (the reply unread in it).
  if (asker === "disconnected") ledger.linkClosed(1)
  if (outcome === "Replied") ledger.askEnded(alias, "Replied", { questionId: question.id, fromId: D, message: reply })
  else ledger.askEnded(alias, "ReplyTimeout")
  if (asker === "broker silent, reply after the wait") {
    // Only now does the broker let the reply out: A's session gets it late.
    now += 500
    ledger.brokerWrote(1, [replyFrame])
    ledger.clientRead(1, [replyFrame])
  }
  return ledger.answersAfterTimeout()
}

describe("Ledger: an ask that timed out with its answer accepted (answer-after-timeout)", () => {
  it("an ask that ended in a timeout though the broker acknowledged its target's reply, its asker's round trip at its deadline answered, is reported", () => {
    const found = acceptedReplyThenAskEnded("ReplyTimeout", "heard")
    expect(found.length).toBe(1)
    expect(found[0]).toContain("timed out, though the broker accepted")
  })

  it("an ask that ended in a timeout before its own deadline (told by the broker) though the broker acknowledged its target's reply is reported", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "told before its deadline").length).toBe(1)
  })

  it("an ask that the accepted reply answered is not", () => {
    expect(acceptedReplyThenAskEnded("Replied")).toEqual([])
  })

  it("an ask whose asker had no connection when it timed out is not: it ends at its own deadline by design", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "disconnected")).toEqual([])
  })

  it("an ask whose asker had no connection at its own deadline is not, though it registered one before its wait ended", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "reconnected after its deadline")).toEqual([])
  })

  it("an ask whose asker's round trip at its deadline was not answered (its client not reading) is not, though its connection stayed up", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "not reading")).toEqual([])
  })

  it("an ask whose asker read everything the broker wrote on its live connection, the broker writing neither the reply nor its round trip's answer, is reported", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "broker silent").length).toBe(1)
  })

  it("an ask whose broker was silent until after the wait ended, then wrote the reply, is reported", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "broker silent, reply after the wait").length).toBe(1)
  })

  it("an ask whose reply was in a slow broker write still on its way when the wait ended is not: its asker gives up by design", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "slow write")).toEqual([])
  })

  it("an ask whose asker read a frame the broker wrote after its deadline, the reply written behind it unread when the wait ended, is not", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "other frame read, reply unread behind it")).toEqual([])
  })

  it("an ask whose asker read a frame the broker wrote after its deadline, but never the reply, is reported", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "other frame read, reply never").length).toBe(1)
  })

  it("an ask whose asker's settling list was not answered (held behind the parked reply) is not, though it read its probe's answer written later", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "settle held")).toEqual([])
  })

  it("an ask whose asker read the answer to its settling list, the reply not come, is reported", () => {
    expect(acceptedReplyThenAskEnded("ReplyTimeout", "settle answered").length).toBe(1)
  })
})

/** The asker's client, as the simulation names it to `askStarted` (its rejoin grace and liveness timeout). */
const CLIENT_A = { key: "client-a", rejoinGraceMs: 5_000, livenessTimeoutMs: 3_000 } as const

/**
 * A asks D through CLIENT_A (unless `named` is false), D's reply is
 * accepted (`delivered` to D) and written to A's link #1, which drops
 * unread `dropAfter` ms after A's deadline — after A's settling `list`
 * there, answered first when `answered`. A's wait ends in a timeout at
 * that drop, with no connection; then A's client (or, with `reader`
 * "another client", a new client of A) registers link #3 `reconnectAfter`
 * ms after the deadline and reads the reply there, given back. Returns
 * what `answersAfterTimeout` reports.
 */
const timedOutThenReconnected = (options: {
  readonly reconnectAfter: number
  readonly dropAfter?: number
  readonly answered?: boolean
  readonly named?: boolean
  readonly reader?: "its client" | "another client"
}): ReadonlyArray<string> => {
  const { answered = false, dropAfter = 200, named = true, reader = "its client", reconnectAfter } = options
  let now = 0
  const ledger = new Ledger({ now: () => now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  ledger.linkOpened(1, A, CLIENT_A.key, 1)
  ledger.linkOpened(2, D, "client-d", 1)
  const register = (link: number, id: string, pid: number) => {
    const { id: _, ...session } = info(id, pid)
    ledger.brokerRead(link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  register(1, A, 1)
  register(2, D, 4)
  now = RECEIVED_AT
  const alias = named ? ledger.askStarted(A, D, CLIENT_A) : ledger.askStarted(A, D)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: TIMEOUT_MS })
  ledger.clientWrote(1, [ask])
  ledger.brokerRead(1, [ask])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  now = RECEIVED_AT + TIMEOUT_MS - 1
  ledger.clientWrote(2, [answer])
  ledger.brokerRead(2, [answer])
  ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
  const replyFrame = JSON.stringify({ type: "message", from: info(D, 4), message: reply })
  ledger.brokerWrote(1, [replyFrame])
  const deadline = RECEIVED_AT + TIMEOUT_MS
  now = deadline + 5
  ledger.clientWrote(1, [JSON.stringify({ type: "list", requestId: "settle", limit: 1, settle: true })])
  if (answered) {
    // What a broker that forgot the reply would do: answer the settling list, no reply before it.
    const settled = JSON.stringify({ type: "sessions", requestId: "settle", sessions: [] })
    ledger.brokerWrote(1, [settled])
    ledger.clientRead(1, [settled])
  }
  now = deadline + dropAfter
  ledger.linkClosed(1)
  ledger.askEnded(alias, "ReplyTimeout")
  now = deadline + reconnectAfter
  ledger.linkOpened(3, A, reader === "its client" ? CLIENT_A.key : "client-a2", 1)
  register(3, A, 1)
  ledger.brokerWrote(3, [replyFrame])
  ledger.clientRead(3, [replyFrame])
  return ledger.answersAfterTimeout()
}

describe("Ledger: an asker that gave up while its client still owed it a next connection (answer-after-timeout)", () => {
  it("an ask that timed out at its settle's drop, its client reading the reply on a connection registered within its rejoin grace, is reported", () => {
    const found = timedOutThenReconnected({ reconnectAfter: 1_000 })
    expect(found.length).toBe(1)
    expect(found[0]).toContain("within its rejoin grace")
  })

  it("is not when the next connection came only after the rejoin grace (counted from the deadline)", () => {
    expect(timedOutThenReconnected({ reconnectAfter: CLIENT_A.rejoinGraceMs + 1 })).toEqual([])
  })

  it("is not when the wait ended once its settling round trip could have timed out (the liveness timeout after the deadline)", () => {
    expect(timedOutThenReconnected({ dropAfter: CLIENT_A.livenessTimeoutMs, reconnectAfter: CLIENT_A.livenessTimeoutMs + 100 })).toEqual([])
  })

  it("is not when its settling list was answered before the drop (the broker's answer without the reply is another check's)", () => {
    expect(timedOutThenReconnected({ answered: true, reconnectAfter: 1_000 })).toEqual([])
  })

  it("is not when another client of the asker read the reply (the ask's client owed nothing more)", () => {
    expect(timedOutThenReconnected({ reader: "another client", reconnectAfter: 1_000 })).toEqual([])
  })

  it("is not when the ask's client is not named (a caller without timings)", () => {
    expect(timedOutThenReconnected({ named: false, reconnectAfter: 1_000 })).toEqual([])
  })
})

/**
 * A asks D through CLIENT_A on link #1 and reads the acknowledgement; D's
 * reply is accepted. Another client of A's session registers link #3 (with
 * `received-v1` when `receivedV1`), a takeover, and the broker writes it the
 * reply — with the rest of the old connection's outbox, as for the base
 * client of sim seed 16843 of `--settle-hold --delivery`. It reads the reply
 * before A's wait ends, or only after (`readAfter`), and confirms it when
 * `confirms`. A's link #1 drops; A's client takes the session back on link
 * #4 before its deadline, and at its deadline reads the answer to its
 * settling list, the reply not come: its wait ends in a timeout. Returns
 * what `answersAfterTimeout` reports.
 */
const replyReadByAnotherClient = (options: {
  readonly receivedV1: boolean
  readonly confirms?: boolean
  readonly readAfter?: boolean
  /** The ask ends `AskAnsweredElsewhere` (`reply-elsewhere-v1`), and what `answeredElsewhereFalsely` reports is returned. */
  readonly endsElsewhere?: boolean
}): ReadonlyArray<string> => {
  const { confirms = false, endsElsewhere = false, readAfter = false, receivedV1 } = options
  let now = 0
  const ledger = new Ledger({ now: () => now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  const register = (link: number, id: string, pid: number, features: ReadonlyArray<string> = []) => {
    const { id: _, ...session } = info(id, pid)
    ledger.brokerRead(link, [JSON.stringify({ type: "register", sessionId: id, session })])
    const registered = JSON.stringify({ type: "registered", sessionId: id, features })
    ledger.brokerWrote(link, [registered])
    ledger.clientRead(link, [registered])
  }
  ledger.linkOpened(1, A, CLIENT_A.key, 1)
  ledger.linkOpened(2, D, "client-d", 1)
  register(1, A, 1)
  register(2, D, 4)
  now = RECEIVED_AT
  const alias = ledger.askStarted(A, D, CLIENT_A)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: TIMEOUT_MS })
  ledger.clientWrote(1, [ask])
  ledger.brokerRead(1, [ask])
  const acknowledged = JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })
  ledger.brokerWrote(1, [acknowledged])
  ledger.clientRead(1, [acknowledged])
  now = RECEIVED_AT + 100
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  ledger.clientWrote(2, [answer])
  ledger.brokerRead(2, [answer])
  ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
  // Another client of A takes the session over; the reply, not yet written to link #1, goes to it.
  now = RECEIVED_AT + 120
  ledger.linkOpened(3, A, "client-a-other", 1)
  register(3, A, 2, receivedV1 ? ["received-v1"] : [])
  const replyFrame = JSON.stringify({ type: "message", from: info(D, 4), message: reply })
  ledger.brokerWrote(3, [replyFrame])
  const readIt = () => {
    ledger.clientRead(3, [replyFrame])
    if (confirms) ledger.brokerRead(3, [JSON.stringify({ type: "received", frames: 2 })])
  }
  if (!readAfter) readIt()
  ledger.linkClosed(1)
  // A's client takes the session back, well before its deadline, and reads all the broker writes it.
  now = RECEIVED_AT + 400
  ledger.linkOpened(4, A, CLIENT_A.key, 1)
  register(4, A, 1)
  const deadline = RECEIVED_AT + TIMEOUT_MS
  now = deadline + 5
  ledger.clientWrote(4, [JSON.stringify({ type: "list", requestId: "settle", limit: 1, settle: true })])
  const settled = JSON.stringify({ type: "sessions", requestId: "settle", sessions: [] })
  ledger.brokerWrote(4, [settled])
  ledger.clientRead(4, [settled])
  ledger.askEnded(alias, endsElsewhere ? "AskAnsweredElsewhere" : "ReplyTimeout")
  if (readAfter) {
    now += 500
    readIt()
  }
  return endsElsewhere ? ledger.answeredElsewhereFalsely() : ledger.answersAfterTimeout()
}

describe("Ledger: an ask whose reply another client of its session took (answer-after-timeout)", () => {
  it("is not reported when a client without received-v1 read the reply before the wait ended (the write was its delivery)", () => {
    expect(replyReadByAnotherClient({ receivedV1: false })).toEqual([])
  })

  it("is not reported when a received-v1 client read the reply and the broker read its confirmation before the wait ended", () => {
    expect(replyReadByAnotherClient({ receivedV1: true, confirms: true })).toEqual([])
  })

  it("is reported when the received-v1 client that read the reply never confirmed it (the broker owes it back to the session)", () => {
    const found = replyReadByAnotherClient({ receivedV1: true })
    expect(found.length).toBe(1)
    expect(found[0]).toContain("timed out, though the broker accepted")
  })

  it("is reported when the other client read the reply only after the ask's wait ended", () => {
    expect(replyReadByAnotherClient({ receivedV1: false, readAfter: true }).length).toBe(1)
  })
})

describe("Ledger: an ask that ended AskAnsweredElsewhere (reply-elsewhere-v1; answered-elsewhere-false)", () => {
  it("is not reported when a client without received-v1 read the reply before the ask ended (the broker's word was true)", () => {
    expect(replyReadByAnotherClient({ receivedV1: false, endsElsewhere: true })).toEqual([])
  })

  it("is reported when the other client, granted received-v1, never confirmed the reply (it could have come back)", () => {
    expect(replyReadByAnotherClient({ receivedV1: true, endsElsewhere: true })).toHaveLength(1)
  })

  it("is reported when the other client read the reply only after the ask ended", () => {
    expect(replyReadByAnotherClient({ receivedV1: false, readAfter: true, endsElsewhere: true })).toHaveLength(1)
  })
})

/**
 * A asks D through CLIENT_A on link #1 and reads the acknowledgement; D's
 * reply is accepted and written to #1. A's client reads it `replyRead`
 * (before its settling `list` at its deadline, or only after that list's
 * answer), reads the answer, and A's wait ends in a timeout `endAfter` ms
 * after that answer. The session takes a reply to its live ask as its
 * client reads it (C-ORD-32), so however long after the answer the wait
 * ends, a reply read while it waited is owed to it (sim seed 3 of
 * `--parked-flush --host-refusals --client-timings` was once excused so,
 * the reply held behind a slow host journal). Returns what
 * `answersAfterTimeout` reports.
 */
const replyReadThenSettled = (options: {
  readonly endAfter: number
  readonly replyRead?: "before the settle" | "after the answer"
  readonly named?: boolean
}): ReadonlyArray<string> => {
  const { endAfter, named = true, replyRead = "before the settle" } = options
  let now = 0
  const ledger = new Ledger({ now: () => now })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: D, name: "d", scopeId: undefined })
  ledger.linkOpened(1, A, CLIENT_A.key, 1)
  ledger.linkOpened(2, D, "client-d", 1)
  for (const [link, id, pid] of [[1, A, 1], [2, D, 4]] as const) {
    const { id: _, ...session } = info(id, pid)
    ledger.brokerRead(link, [JSON.stringify({ type: "register", sessionId: id, session })])
    ledger.clientRead(link, [JSON.stringify({ type: "registered", sessionId: id })])
  }
  now = RECEIVED_AT
  const alias = named ? ledger.askStarted(A, D, CLIENT_A) : ledger.askStarted(A, D)
  const ask = JSON.stringify({ type: "send", to: D, message: question, askTimeoutMs: TIMEOUT_MS })
  ledger.clientWrote(1, [ask])
  ledger.brokerRead(1, [ask])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: question.id, delivery: "socket_delivered" })])
  const answer = JSON.stringify({ type: "send", to: A, message: reply })
  now = RECEIVED_AT + TIMEOUT_MS - 300
  ledger.clientWrote(2, [answer])
  ledger.brokerRead(2, [answer])
  ledger.clientRead(2, [JSON.stringify({ type: "delivered", messageId: reply.id, delivery: "socket_delivered" })])
  const replyFrame = JSON.stringify({ type: "message", from: info(D, 4), message: reply })
  ledger.brokerWrote(1, [replyFrame])
  if (replyRead === "before the settle") ledger.clientRead(1, [replyFrame])
  const deadline = RECEIVED_AT + TIMEOUT_MS
  now = deadline
  ledger.clientWrote(1, [JSON.stringify({ type: "list", requestId: "settle", limit: 1, settle: true })])
  const settled = JSON.stringify({ type: "sessions", requestId: "settle", sessions: [] })
  ledger.brokerWrote(1, [settled])
  if (replyRead === "after the answer") {
    // Read out of the order written, 5 ms apart: what a broker answering the settle ahead of the reply would look like.
    ledger.clientRead(1, [settled])
    now = deadline + 5
    ledger.clientRead(1, [replyFrame])
  } else {
    ledger.clientRead(1, [settled])
  }
  now = deadline + endAfter
  ledger.askEnded(alias, "ReplyTimeout")
  return ledger.answersAfterTimeout()
}

describe("Ledger: an ask whose reply its client read while it waited, which ended in a timeout (answer-after-timeout)", () => {
  it("is reported when the wait ended the liveness timeout after its settling answer, the reply read before that answer (C-ORD-32: no excuse for a slow consumer)", () => {
    const found = replyReadThenSettled({ endAfter: CLIENT_A.livenessTimeoutMs })
    expect(found).toHaveLength(1)
    expect(found[0]).toContain("timed out, though the broker accepted")
  })

  it("is reported when the wait ended soon after the settling answer", () => {
    const found = replyReadThenSettled({ endAfter: 40 })
    expect(found).toHaveLength(1)
    expect(found[0]).toContain("timed out, though the broker accepted")
  })

  it("is reported when the reply was read only after the settling answer, however long the wait went on", () => {
    expect(replyReadThenSettled({ endAfter: CLIENT_A.livenessTimeoutMs, replyRead: "after the answer" })).toHaveLength(1)
  })

  it("is reported when the ask's client is not named (its liveness timeout unknown)", () => {
    expect(replyReadThenSettled({ endAfter: CLIENT_A.livenessTimeoutMs, named: false })).toHaveLength(1)
  })
})
