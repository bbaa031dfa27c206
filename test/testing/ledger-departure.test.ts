/**
 * The ledger's departure-order check (C-BRK-33, ledger/departure.ts) on its
 * own, fed by hand: a message its sender sent before it left (as the broker
 * saw the leave) must reach a recipient before the sender's `session_left`
 * there. After it, it is `left-before-mail`, also when the sender left and
 * registered again before the mail was queued for the recipient (a gap the
 * broker once left open, no longer excused).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
const session = (pid: number) => ({ cwd: "/", model: "m", pid, startedAt: 0, lastActivity: 0 })
const from = { id: A, ...session(1) }
const last: Message = { id: "m-0001", timestamp: 0, content: { text: "last words" } }
const later: Message = { id: "m-0002", timestamp: 0, content: { text: "back again" } }
const sendOf = (message: Message) => JSON.stringify({ type: "send", to: B, message })
const delivered = (message: Message) => JSON.stringify({ type: "message", from, message })
const registerOf = (id: string, pid: number) => JSON.stringify({ type: "register", sessionId: id, session: session(pid) })
const registeredOf = (id: string) => JSON.stringify({ type: "registered", sessionId: id })
const unregister = JSON.stringify({ type: "unregister" })
const left = JSON.stringify({ type: "session_left", sessionId: A })

interface Story {
  /** How A leaves: `unregister` on its connection, or the connection ends. */
  readonly leaves: "unregister" | "close"
  /** A registers again (on its connection after an `unregister`, else on a new one) before B reads. */
  readonly rejoins?: boolean
  /** B registers only after A's send (A's mail waits in the mailbox and is flushed to B's new connection). */
  readonly receiverLate?: boolean
  /** The broker writes B's `session_left` for A before the departure (it was about an earlier one). */
  readonly leftWrittenEarly?: boolean
  /** What B reads, in order. */
  readonly reads: ReadonlyArray<"left" | "last" | "later">
  /**
   * The broker writes what follows the `session_left` in a later write (it was not queued for B when B's
   * writer collected the departure); by default everything B reads is one write.
   */
  readonly queuedAfterLeft?: boolean
}

/** A ledger of sessions A and B, links #1 (A's, registered) and #2 (B's, opened; registered by `registerB`). */
const linksOfAAndB = () => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 1, [registerOf(A, 1)])
  ledger.clientRead(1, [registeredOf(A)])
  return ledger
}

/** A (link #1) sends `last` to B (link #2), leaves, perhaps registers again; B reads as the story says. */
const run = (story: Story): ReadonlyArray<string> => {
  const ledger = linksOfAAndB()
  const receiverJoins = () => {
    brokerTook(ledger, 2, [registerOf(B, 2)])
    ledger.clientRead(2, [registeredOf(B)])
  }
  if (story.receiverLate !== true) receiverJoins()
  if (story.leftWrittenEarly === true) ledger.brokerWrote(2, [left])
  ledger.clientWrote(1, [sendOf(last)])
  brokerTook(ledger, 1, [sendOf(last)])
  ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: last.id, delivery: "socket_delivered" })])
  if (story.receiverLate === true) receiverJoins()
  if (story.leaves === "unregister") {
    ledger.clientWrote(1, [unregister])
    brokerTook(ledger, 1, [unregister])
  } else {
    ledger.brokerEnded(1)
    ledger.linkClosed(1)
  }
  if (story.rejoins === true) {
    const link = story.leaves === "unregister" ? 1 : 3
    if (link === 3) ledger.linkOpened(3, A, "client-a2", 0)
    brokerTook(ledger, link, [registerOf(A, 1)])
    ledger.clientRead(link, [registeredOf(A)])
    ledger.clientWrote(link, [sendOf(later)])
    brokerTook(ledger, link, [sendOf(later)])
  }
  const frames = story.reads.map((read) => read === "left" ? left : delivered(read === "last" ? last : later))
  const toWrite = story.leftWrittenEarly === true ? frames.filter((frame) => frame !== left) : frames
  const split = story.queuedAfterLeft === true ? toWrite.indexOf(left) + 1 : toWrite.length
  ledger.brokerWriteStarted(2, toWrite.slice(0, split))
  ledger.brokerWrote(2, toWrite.slice(0, split))
  if (split < toWrite.length) {
    ledger.brokerWriteStarted(2, toWrite.slice(split))
    ledger.brokerWrote(2, toWrite.slice(split))
  }
  ledger.clientRead(2, frames)
  return ledger.violations.map((violation) => violation.kind)
}

describe("Ledger: a sender's mail before its session_left (C-BRK-33)", () => {
  it("the sender's last message before its session_left passes", () => {
    expect(run({ leaves: "unregister", reads: ["last", "left"] })).toEqual([])
    expect(run({ leaves: "close", reads: ["last", "left"] })).toEqual([])
  })

  it("the sender's last message after its session_left is left-before-mail, whether it unregistered or its connection ended", () => {
    expect(run({ leaves: "unregister", reads: ["left", "last"] })).toEqual(["left-before-mail"])
    expect(run({ leaves: "close", reads: ["left", "last"] })).toEqual(["left-before-mail"])
  })

  it("a session_left the broker wrote before the departure does not announce it: no violation", () => {
    expect(run({ leaves: "unregister", leftWrittenEarly: true, reads: ["left", "last"] })).toEqual([])
  })

  it("a message sent after the sender registered again may follow its earlier session_left", () => {
    expect(run({ leaves: "unregister", rejoins: true, reads: ["last", "left", "later"] })).toEqual([])
  })

  it("the sender left and registered again, its live-routed mail written after the session_left's write: left-before-mail, not excused", () => {
    expect(run({ leaves: "unregister", rejoins: true, queuedAfterLeft: true, reads: ["left", "last", "later"] })).toEqual([
      "left-before-mail"
    ])
    expect(run({ leaves: "close", rejoins: true, queuedAfterLeft: true, reads: ["left", "last", "later"] })).toEqual([
      "left-before-mail"
    ])
  })

  it("no gap when the mail was queued at the departure's write: after the session_left in that same write it is left-before-mail despite the return", () => {
    expect(run({ leaves: "unregister", rejoins: true, reads: ["left", "last", "later"] })).toEqual(["left-before-mail"])
    expect(run({ leaves: "close", rejoins: true, reads: ["left", "last", "later"] })).toEqual(["left-before-mail"])
  })

  it("mail flushed from the mailbox when the recipient registered is no part of the gap: left-before-mail despite the return", () => {
    expect(run({ leaves: "unregister", rejoins: true, receiverLate: true, queuedAfterLeft: true, reads: ["left", "last", "later"] })).toEqual([
      "left-before-mail"
    ])
  })
})

/**
 * A's link #1 reads `last` and ends before A hears the answer; A registers
 * on link #3 and sends it again (the same id); `thenLeaves`: A unregisters
 * there at once. B reads A's `session_left`, then `last`, written after it
 * in a write of its own.
 */
const resent = (thenLeaves: boolean): ReadonlyArray<string> => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(1, A, "client-a", 0)
  ledger.linkOpened(2, B, "client-b", 0)
  ledger.linkOpened(3, A, "client-a", 0)
  brokerTook(ledger, 1, [registerOf(A, 1)])
  ledger.clientRead(1, [registeredOf(A)])
  brokerTook(ledger, 2, [registerOf(B, 2)])
  ledger.clientRead(2, [registeredOf(B)])
  ledger.clientWrote(1, [sendOf(last)])
  brokerTook(ledger, 1, [sendOf(last)])
  ledger.brokerEnded(1)
  ledger.linkClosed(1)
  brokerTook(ledger, 3, [registerOf(A, 1), sendOf(last), ...(thenLeaves ? [unregister] : [])])
  // Two writes: `last` was not queued for B when its writer wrote the session_left.
  ledger.brokerWriteStarted(2, [left])
  ledger.brokerWrote(2, [left])
  ledger.brokerWriteStarted(2, [delivered(last)])
  ledger.brokerWrote(2, [delivered(last)])
  ledger.clientRead(2, [left, delivered(last)])
  return ledger.violations.map((violation) => violation.kind)
}

describe("Ledger: a message sent again after its sender's connection ended", () => {
  it("the copy the rejoined connection sent is the one that counts: after the session_left of the ended connection, no violation", () => {
    expect(resent(false)).toEqual([])
  })

  it("gone again at once: the earlier copy's connection ended and the sender returned, and the copy came after the session_left: left-before-mail", () => {
    expect(resent(true)).toEqual(["left-before-mail"])
  })
})

describe("Ledger: a broker write that reaches the transport late", () => {
  it("a session_left announces the departures seen when its write began, not those read while the write was on its way", () => {
    const ledger = linksOfAAndB()
    brokerTook(ledger, 2, [registerOf(B, 2)])
    ledger.clientRead(2, [registeredOf(B)])
    // A unregisters (its first departure), registers again on the same link, and sends `later` to B.
    ledger.clientWrote(1, [unregister])
    brokerTook(ledger, 1, [unregister])
    brokerTook(ledger, 1, [registerOf(A, 1)])
    ledger.clientRead(1, [registeredOf(A)])
    ledger.clientWrote(1, [sendOf(later)])
    brokerTook(ledger, 1, [sendOf(later)])
    // B's writer takes the first departure and A's new join; the transport takes that write only after
    // A unregistered again (its second departure).
    const joined = JSON.stringify({ type: "session_joined", session: from })
    ledger.brokerWriteStarted(2, [left, joined])
    ledger.clientWrote(1, [unregister])
    brokerTook(ledger, 1, [unregister])
    ledger.brokerWrote(2, [left, joined])
    // The next write: `later`, then the second departure's session_left.
    ledger.brokerWriteStarted(2, [delivered(later), left])
    ledger.brokerWrote(2, [delivered(later), left])
    ledger.clientRead(2, [left, joined, delivered(later), left])
    expect(ledger.violations.map((violation) => violation.kind)).toEqual([])
  })
})

describe("Ledger: two departures of one sender written together (a withheld return, seeds 157 and 108 of --held-return)", () => {
  /**
   * A unregisters (its first departure), registers again on the same link, sends `later` and unregisters
   * again (its second departure) before B's writer takes anything; B's writes (`writes`: their sizes,
   * one write by default) hold both session_lefts.
   */
  const twoInOneWrite = (
    reads: ReadonlyArray<"left" | "joined" | "later">,
    writes: ReadonlyArray<number> = [reads.length]
  ): ReadonlyArray<string> => {
    const ledger = linksOfAAndB()
    brokerTook(ledger, 2, [registerOf(B, 2)])
    ledger.clientRead(2, [registeredOf(B)])
    ledger.clientWrote(1, [unregister])
    brokerTook(ledger, 1, [unregister])
    brokerTook(ledger, 1, [registerOf(A, 1)])
    ledger.clientRead(1, [registeredOf(A)])
    ledger.clientWrote(1, [sendOf(later), unregister])
    brokerTook(ledger, 1, [sendOf(later), unregister])
    const joined = JSON.stringify({ type: "session_joined", session: from })
    const frames = reads.map((read) => read === "left" ? left : read === "joined" ? joined : delivered(later))
    let at = 0
    for (const size of writes) {
      ledger.brokerWriteStarted(2, frames.slice(at, at + size))
      ledger.brokerWrote(2, frames.slice(at, at + size))
      at += size
    }
    ledger.clientRead(2, frames)
    return ledger.violations.map((violation) => violation.kind)
  }

  it("the first session_left announces the first departure only: the second registration's mail between the two passes", () => {
    expect(twoInOneWrite(["left", "joined", "later", "left"])).toEqual([])
  })

  it("that mail after both session_lefts is left-before-mail", () => {
    expect(twoInOneWrite(["left", "joined", "left", "later"])).toEqual(["left-before-mail"])
  })

  it("the first session_left and the second registration's join in one write, its mail and the second session_left in the next: the first announces the departure before that registration only", () => {
    expect(twoInOneWrite(["left", "joined", "later", "left"], [2, 2])).toEqual([])
    expect(twoInOneWrite(["left", "joined", "left", "later"], [2, 2])).toEqual(["left-before-mail"])
  })
})

describe("Ledger: an unregister the broker read but never handled (seed 366 of --held-return)", () => {
  /**
   * A left once (link #1's `unregister`), came back on link #3, sent `last`, and wrote its `unregister`
   * there; the broker's reader of link #3 held that `unregister` behind parked output (read, not
   * handled), and A's next `register`, on link #4, took link #3 over before it was handed back: the
   * broker dropped it. B then reads the `session_left` of A's first departure, and `last` after it.
   * `unregisterHandled` says whether the broker handled that `unregister` after all (a real departure).
   */
  const heldUnregister = (unregisterHandled: boolean): ReadonlyArray<string> => {
    const ledger = linksOfAAndB()
    brokerTook(ledger, 2, [registerOf(B, 2)])
    ledger.clientRead(2, [registeredOf(B)])
    ledger.clientWrote(1, [unregister])
    brokerTook(ledger, 1, [unregister])
    ledger.linkOpened(3, A, "client-a2", 0)
    brokerTook(ledger, 3, [registerOf(A, 3)])
    ledger.clientRead(3, [registeredOf(A)])
    ledger.clientWrote(3, [sendOf(last), unregister])
    brokerTook(ledger, 3, [sendOf(last)])
    ledger.clientRead(3, [JSON.stringify({ type: "delivered", messageId: last.id, delivery: "socket_delivered" })])
    if (unregisterHandled) brokerTook(ledger, 3, [unregister])
    else ledger.brokerRead(3, [unregister]) // held behind parked output: read, not handled
    ledger.linkOpened(4, A, "client-a3", 0)
    brokerTook(ledger, 4, [registerOf(A, 4)])
    if (!unregisterHandled) ledger.heldDropped(3, [unregister]) // the takeover closes link #3
    ledger.brokerEnded(3)
    ledger.linkClosed(3)
    ledger.clientRead(4, [registeredOf(A)])
    ledger.brokerWriteStarted(2, [left, delivered(last)])
    ledger.brokerWrote(2, [left, delivered(last)])
    ledger.clientRead(2, [left, delivered(last)])
    return ledger.violations.map((violation) => violation.kind)
  }

  it("dropped unhandled at the takeover, it was no departure: the mail after the first departure's session_left passes", () => {
    expect(heldUnregister(false)).toEqual([])
  })

  it("handled, it was a departure: the same reads are left-before-mail", () => {
    expect(heldUnregister(true)).toEqual(["left-before-mail"])
  })
})
