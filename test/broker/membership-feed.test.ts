/**
 * MembershipFeed as a state machine (fast-check): sessions join, change
 * presence and leave in random order, recipients collect at random moments,
 * and the feed is compacted below the lowest cursor. The frame texts are
 * cached per session and shared by every recipient that collects them, so a
 * cached frame reused after the session changed would hand a recipient stale
 * info: each recipient's view, built only from the frames it collected, must
 * equal the scope's current membership (itself excluded) after every collect,
 * and each frame must be the right kind for what the recipient had seen (a
 * takeover is one `session_joined` for a session the recipient knows, P16).
 * Seed case: a session that joined (seen), left, joined and left again
 * before the next collect used to be silent, leaving the recipient believing
 * it present.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { JoinedFrameParts } from "../../src/broker/frameParts.ts"
import { MembershipFeed, type WithheldDeparture } from "../../src/broker/MembershipFeed.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"

const IDS = ["s0", "s1", "s2"] as const

type Op =
  | { readonly kind: "join"; readonly id: number }
  | { readonly kind: "update"; readonly id: number }
  | { readonly kind: "leave"; readonly id: number }
  | { readonly kind: "collect"; readonly recipient: number }
  | { readonly kind: "compact" }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("join" as const), id: fc.nat(IDS.length - 1) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("update" as const), id: fc.nat(IDS.length - 1) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("leave" as const), id: fc.nat(IDS.length - 1) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("collect" as const), recipient: fc.nat(IDS.length) }), weight: 4 },
  { arbitrary: fc.constant({ kind: "compact" as const }), weight: 1 }
)

/** A recipient: one of the sessions (it never hears of itself) or an outside watcher (`self` undefined). */
interface Recipient {
  readonly self: string | undefined
  cursor: number
  /** Departures dropped from the feed before it saw them (as Membership keeps them: `Peer.owedDepartures`). */
  readonly owed: Set<string>
  /** What its frames told it: session id → info text, and which join of that session it heard of. */
  readonly view: Map<string, { readonly info: string; readonly join: number }>
}

const infoOf = (frame: Record<string, unknown>): string => JSON.stringify(frame["session"])
const idOf = (frame: Record<string, unknown>): string => {
  const session = frame["session"]
  const id = typeof session === "object" && session !== null ? Reflect.get(session, "id") : frame["sessionId"]
  return String(id)
}

/** Runs `ops`, compacting with `maxDeparted`, and checks every recipient after each of its collects. */
const check = (ops: ReadonlyArray<Op>, maxDeparted: number): void => {
  const feed = new MembershipFeed()
  const truth = new Map<string, string>()
  /** How many times each session has joined. */
  const joins = new Map<string, number>()
  let version = 0
  // Every recipient starts before the first change, with an empty view.
  const recipients: Array<Recipient> = [...IDS, undefined].map((self) => ({
    self,
    cursor: feed.seq,
    owed: new Set(),
    view: new Map()
  }))
  for (const op of ops) {
    if (op.kind === "join" || op.kind === "update" || op.kind === "leave") {
      const id = IDS[op.id]!
      const info = JSON.stringify({ id, version: ++version })
      if (op.kind === "join") {
        // Of a present session: a takeover (P16).
        truth.set(id, info)
        joins.set(id, (joins.get(id) ?? 0) + 1)
        feed.joined(id, info)
      } else if (op.kind === "update" && truth.has(id)) {
        truth.set(id, info)
        feed.updated(id, info)
      } else if (op.kind === "leave" && truth.has(id)) {
        truth.delete(id)
        feed.left(id)
      }
    } else if (op.kind === "compact") {
      const minCursor = Math.min(...recipients.map((r) => r.cursor))
      feed.compact(minCursor, maxDeparted, (departed) => {
        assert.isBelow(maxDeparted, Number.MAX_SAFE_INTEGER, "nothing a recipient has not seen is dropped")
        // Membership.compact's rule: a lagging recipient that saw the session present is owed the departure.
        for (const r of recipients) {
          if (r.cursor < departed.seq && departed.presentSince <= r.cursor && r.self !== departed.id) r.owed.add(departed.id)
        }
      })
    } else {
      const recipient = recipients[op.recipient]!
      // As Membership.collect: owed departures first, then the feed.
      const out: Array<OutFrame> = [...recipient.owed].map((id) => JSON.stringify({ type: "session_left", sessionId: id }))
      recipient.owed.clear()
      recipient.cursor = feed.collect(recipient.cursor, recipient.self, out)
      const told = new Map<string, unknown>()
      for (const text of out) {
        const frame: Record<string, unknown> = JSON.parse(frameText(text))
        const id = idOf(frame)
        assert.notStrictEqual(id, recipient.self, "no frame about the recipient itself")
        // One frame per changed session; two (left, then joined) for one that left and joined again.
        const before = told.get(id)
        assert.isTrue(
          before === undefined || (before === "session_left" && frame["type"] === "session_joined"),
          `frames for ${id}: ${String(before)}, then ${String(frame["type"])}`
        )
        told.set(id, frame["type"])
        const join = joins.get(id) ?? 0
        const seen = recipient.view.get(id)
        if (frame["type"] === "session_joined") {
          assert.isTrue(seen === undefined || seen.join < join, `session_joined for ${id}, whose join it had seen`)
          recipient.view.set(id, { info: infoOf(frame), join })
        } else if (frame["type"] === "presence_update") {
          assert.strictEqual(seen?.join, join, `presence_update for ${id}, whose join it had not seen`)
          recipient.view.set(id, { info: infoOf(frame), join })
        } else {
          assert.strictEqual(frame["type"], "session_left")
          assert.isTrue(recipient.view.delete(id), `session_left for ${id}, which it had not seen join`)
        }
      }
      const expected = new Map([...truth].filter(([id]) => id !== recipient.self))
      assert.deepStrictEqual(new Map([...recipient.view].map(([id, { info }]) => [id, info])), expected)
    }
  }
}

const opsArb = fc.array(opArb, { maxLength: 60, size: "max" })

describe("MembershipFeed", () => {
  it("every recipient's view equals the current membership after each collect, frames shared across recipients never stale", () => {
    fc.assert(fc.property(opsArb, (ops) => check(ops, Number.MAX_SAFE_INTEGER)), { numRuns: 1000 })
  })

  it("with departed entries dropped past a bound of one, the departures owed to lagging recipients keep their views right", () => {
    fc.assert(fc.property(opsArb, (ops) => check(ops, 1)), { numRuns: 1000 })
  })

  it("a session_joined is collected in parts around the session's info JSON, one frame for every recipient", () => {
    const feed = new MembershipFeed()
    const info = JSON.stringify({ id: "s1", name: "one" })
    feed.joined("s1", info)
    const first: Array<OutFrame> = []
    const second: Array<OutFrame> = []
    feed.collect(0, "s2", first)
    feed.collect(0, undefined, second)
    const frame = first[0]
    assert.instanceOf(frame, JoinedFrameParts)
    assert.strictEqual(frame.text(), `{"type":"session_joined","session":${info}}`)
    assert.strictEqual(second[0], frame)
  })
})

describe("MembershipFeed: a departure withheld with the return", () => {
  const info = (n: number) => JSON.stringify({ id: "x", n })
  const withheldReturn = (): WithheldDeparture => ({ passed: false, holds: 1, rejoined: true, joinPassed: false, behindCustody: false, since: 0 })

  it("passes over the departure, the new join and the presence of a session marked rejoined, then hands the join over as owed", () => {
    const feed = new MembershipFeed()
    feed.joined("x", info(1))
    const cursor = feed.seq
    feed.left("x")
    const since = feed.joined("x", info(2))
    feed.updated("x", info(3))
    const withheld = new Map([["x", withheldReturn()]])
    const out: Array<OutFrame> = []
    const departures: Array<OutFrame> = []
    const next = feed.collect(cursor, undefined, out, departures, withheld)
    assert.deepStrictEqual([out, departures], [[], []])
    assert.deepInclude(withheld.get("x"), { passed: true, joinPassed: true })
    // Owed once released: the join with the latest state, and the tag of the return.
    const owed = feed.passedJoin("x", next)
    assert.deepStrictEqual(owed && [frameText(owed[0]), owed[1]], [`{"type":"session_joined","session":${info(3)}}`, since])
    assert.isUndefined(feed.passedJoin("x", cursor), "a join still ahead of the cursor is the feed's to write")
  })
})
