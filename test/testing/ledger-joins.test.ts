/**
 * The ledger's `missing-left` check (ledger/joins.ts) on its own, fed by
 * hand: a connection that read A join, then reads A join again with no
 * `session_left` of A between, though A departed in between, is reported;
 * a takeover, a `session_left` read between, mail of A's still on its way
 * to the reader (a departure it may have held back), and the reader's own
 * new registration are not. And `missing-pair`, at the end of the run: a
 * live connection that still shows A by the join of a registration A left
 * since, A back, told neither the `session_left` nor the new join; not the
 * pair read, a takeover, A not back, or a connection closed by the end.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../../src/protocol/frames.ts"
import { Ledger } from "../../src/testing/Ledger.ts"
import { brokerTook } from "../support/ledgerFeed.ts"

const A = "sim-1-a"
const B = "sim-2-b"
/** A's client registers each of its connections with the same `startedAt` and pid, as the simulation's do. */
const info = { cwd: "/", model: "m", pid: 1, startedAt: 5, lastActivity: 5 }
const registerOf = (id: string, pid: number) =>
  JSON.stringify({ type: "register", sessionId: id, session: { ...info, pid } })
const registeredOf = (id: string) => JSON.stringify({ type: "registered", sessionId: id })
const joined = JSON.stringify({ type: "session_joined", session: { id: A, ...info } })
const left = JSON.stringify({ type: "session_left", sessionId: A })
const mail: Message = { id: "m-0001", timestamp: 0, content: { text: "last words" } }
const sendOf = JSON.stringify({ type: "send", to: B, message: mail })
const delivered = JSON.stringify({ type: "message", from: { id: A, ...info }, message: mail })

interface Story {
  /** How A's first registration ends: an `unregister`, its connection ending, or a takeover by a new connection. */
  readonly ends: "unregister" | "close" | "takeover"
  /** A sends B a message before it ends, which B has not read when it reads A's second join. */
  readonly mailOnItsWay?: boolean
  /** The first join is written to B before A's registration ends, and read only after A came back. */
  readonly firstReadLate?: boolean
  /** What B reads between A's two joins (on its link #2), each in a write of its own. */
  readonly between?: ReadonlyArray<"left" | "registered">
}

/** B's link #2 is written `frames` in one write, which its client reads. */
const toB = (ledger: Ledger, frames: ReadonlyArray<string>): void => {
  ledger.brokerWriteStarted(2, frames)
  ledger.brokerWrote(2, frames)
  ledger.clientRead(2, frames)
}

/** B reads A join; A's registration ends as the story says and A registers again; B reads A join again. */
const run = (story: Story): ReadonlyArray<string> => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [registerOf(B, 2)])
  ledger.clientRead(2, [registeredOf(B)])
  ledger.linkOpened(1, A, "client-a", 0)
  brokerTook(ledger, 1, [registerOf(A, 1)])
  ledger.clientRead(1, [registeredOf(A)])
  if (story.firstReadLate === true) {
    ledger.brokerWriteStarted(2, [joined])
    ledger.brokerWrote(2, [joined])
  } else toB(ledger, [joined])
  if (story.mailOnItsWay === true) {
    ledger.clientWrote(1, [sendOf])
    brokerTook(ledger, 1, [sendOf])
    ledger.clientRead(1, [JSON.stringify({ type: "delivered", messageId: mail.id, delivery: "socket_delivered" })])
  }
  if (story.ends === "unregister") brokerTook(ledger, 1, [JSON.stringify({ type: "unregister" })])
  if (story.ends === "close") {
    ledger.brokerEnded(1)
    ledger.linkClosed(1)
  }
  ledger.linkOpened(3, A, "client-a", 0)
  brokerTook(ledger, 3, [registerOf(A, 1)])
  ledger.clientRead(3, [registeredOf(A)])
  if (story.firstReadLate === true) ledger.clientRead(2, [joined])
  for (const frame of story.between ?? []) toB(ledger, [frame === "left" ? left : registeredOf(B)])
  toB(ledger, [joined])
  if (story.mailOnItsWay === true) toB(ledger, [delivered])
  return ledger.violations.map((violation) => violation.kind)
}

describe("Ledger: a join with no session_left before it (missing-left)", () => {
  it("A departed (unregister, or its connection ended) and came back, B read its joins with no session_left between: missing-left", () => {
    expect(run({ ends: "unregister" })).toEqual(["missing-left"])
    expect(run({ ends: "close" })).toEqual(["missing-left"])
  })

  it("the first join read only after A came back counts the departures as when the broker wrote it: missing-left", () => {
    expect(run({ ends: "close", firstReadLate: true })).toEqual(["missing-left"])
    expect(run({ ends: "close", firstReadLate: true, between: ["left"] })).toEqual([])
  })

  it("the same with B reading A's session_left between the joins: no violation", () => {
    expect(run({ ends: "unregister", between: ["left"] })).toEqual([])
    expect(run({ ends: "close", between: ["left"] })).toEqual([])
  })

  it("A taken over by its new connection (no departure, P16): the second join needs no session_left", () => {
    expect(run({ ends: "takeover" })).toEqual([])
  })

  it("A's mail from before its departure still on its way to B when B reads the second join: passed over (B may have held the departure back behind it)", () => {
    expect(run({ ends: "close", mailOnItsWay: true })).toEqual([])
    expect(run({ ends: "unregister", mailOnItsWay: true })).toEqual([])
  })

  it("B's link registered again between the joins: its view starts afresh, no violation", () => {
    expect(run({ ends: "close", between: ["registered"] })).toEqual([])
  })
})

interface PairStory {
  /** How A's first registration ends: an `unregister`, its connection ending, or a takeover by a new connection. */
  readonly ends: "unregister" | "close" | "takeover"
  /** Whether A registers again after that. */
  readonly back: boolean
  /** What B's link #2 reads after A's registration ended, each in a write of its own. */
  readonly reads: ReadonlyArray<"left" | "joined">
  /** B's link #2 is closed at the end of the run. */
  readonly readerClosed?: boolean
}

/** B reads A join; A's registration ends as the story says (and A comes back); B reads what it says; the run ends. */
const pair = (story: PairStory): ReadonlyArray<string> => {
  const ledger = new Ledger({ now: () => 0 })
  ledger.addSession({ id: A, name: "a", scopeId: undefined })
  ledger.addSession({ id: B, name: "b", scopeId: undefined })
  ledger.linkOpened(2, B, "client-b", 0)
  brokerTook(ledger, 2, [registerOf(B, 2)])
  ledger.clientRead(2, [registeredOf(B)])
  ledger.linkOpened(1, A, "client-a", 0)
  brokerTook(ledger, 1, [registerOf(A, 1)])
  ledger.clientRead(1, [registeredOf(A)])
  toB(ledger, [joined])
  if (story.ends === "unregister") brokerTook(ledger, 1, [JSON.stringify({ type: "unregister" })])
  if (story.ends === "close") {
    ledger.brokerEnded(1)
    ledger.linkClosed(1)
  }
  if (story.back) {
    ledger.linkOpened(3, A, "client-a", 0)
    brokerTook(ledger, 3, [registerOf(A, 1)])
    ledger.clientRead(3, [registeredOf(A)])
  }
  for (const frame of story.reads) toB(ledger, [frame === "left" ? left : joined])
  if (story.readerClosed === true) {
    ledger.brokerEnded(2)
    ledger.linkClosed(2)
  }
  ledger.finish()
  return ledger.violations.map((violation) => violation.kind).filter((kind) => kind === "missing-pair")
}

describe("Ledger: a departure and return neither of which reached a connection (missing-pair)", () => {
  it("A departed (unregister, or its connection ended) and came back, and B's live connection read neither session_left nor the new join: missing-pair", () => {
    expect(pair({ ends: "unregister", back: true, reads: [] })).toEqual(["missing-pair"])
    expect(pair({ ends: "close", back: true, reads: [] })).toEqual(["missing-pair"])
  })

  it("B read the pair (session_left, then the new join): no violation", () => {
    expect(pair({ ends: "unregister", back: true, reads: ["left", "joined"] })).toEqual([])
    expect(pair({ ends: "close", back: true, reads: ["left", "joined"] })).toEqual([])
  })

  it("A taken over by its new connection (no departure, P16), B told nothing: no violation", () => {
    expect(pair({ ends: "takeover", back: true, reads: [] })).toEqual([])
  })

  it("A departed and is not back: not this check's (the end-of-run view judges a missing session_left)", () => {
    expect(pair({ ends: "close", back: false, reads: [] })).toEqual([])
  })

  it("B's connection closed by the end: not judged", () => {
    expect(pair({ ends: "close", back: true, reads: [], readerClosed: true })).toEqual([])
  })
})
