/**
 * The page's reading of observe-v1 snapshots (src/ui/ObservedInput.ts):
 * names for ids, refusals drawn with the traffic, a restored ask's age, a
 * watch folded into one snapshot per element, the open-asks total beyond
 * the listed asks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { BrokerSnapshot, ObserveEvent, SessionRow } from "../../src/observe/Snapshot.ts"
import { currentSnapshots, fromSnapshot } from "../../src/ui/ObservedInput.ts"
import { buildView, type ViewContext } from "../../src/ui/View.ts"

const T0 = 1_800_000_000_000

const row = (id: string, name: string | undefined): SessionRow => ({
  id,
  ...(name === undefined ? {} : { name }),
  group: "default",
  status: "idle",
  lastSeen: T0,
  lastActivity: 0,
  pendingAsks: 0,
  waitingAsks: 0,
  messagesOut: 1,
  messagesIn: 2,
  outboxChars: 0,
  ratePerSec: 0.5,
  registeredAt: T0 - 1_000
})

const askEntry: BrokerSnapshot["traffic"][number] = {
  seq: 1,
  at: T0 - 5_000,
  from: { id: "id-alice-123456", name: "alice" },
  to: { id: "0123456789abcdef" },
  kind: "ask",
  messageId: "ask-1",
  outcome: "delivered"
}

const snapshot: BrokerSnapshot = {
  at: T0,
  startedAt: T0 - 60_000,
  sessionCount: 2,
  sessions: [row("id-alice-123456", "alice"), row("0123456789abcdef", undefined)],
  queues: { mailbox: 4, staged: 5, outboxChars: 6, unregistered: 0 },
  askCount: 2,
  asks: [
    { messageId: "ask-1", from: { id: "id-alice-123456", name: "alice" }, to: { id: "0123456789abcdef" }, askedAt: T0 - 5_000, deadline: T0 + 1 },
    { messageId: "ask-restored", from: { id: "id-alice-123456", name: "alice" }, to: { id: "0123456789abcdef" }, deadline: T0 + 1 }
  ],
  totals: { delivered: 7, queued: 2, staged: 1, refused: 3, asks: 2, replies: 0 },
  rate: { windowMs: 10_000, routedPerSec: 1.5 },
  traffic: [
    askEntry,
    { seq: 2, at: T0 - 1_000, from: { id: "0123456789abcdef" }, to: { id: "id-alice-123456", name: "alice" }, kind: "reply", messageId: "r-1", replyTo: "ask-0", outcome: "queued" }
  ],
  refusals: [
    { seq: 1, at: T0 - 3_000, from: { id: "id-alice-123456", name: "alice" }, to: "ghost", messageId: "m-x", code: "E_TARGET_NOT_FOUND", reason: "Session not found" }
  ]
}

const context: ViewContext = {
  now: T0,
  stuckAfterMs: 30_000,
  connection: { state: "connected", detail: "connected" },
  socketPath: "/tmp/broker.sock"
}

describe("ui observed input", () => {
  it("names parties (an id's first 8 characters when unnamed), and counts a restored ask from the broker's start", () => {
    const input = fromSnapshot(snapshot)
    assert.deepStrictEqual(input.sessions.map((s) => s.name), ["alice", "01234567"])
    // Live parties by id (the view finds their sessions), shown by name.
    assert.deepStrictEqual(input.openAsks, [
      { from: "id-alice-123456", to: "0123456789abcdef", messageId: "ask-1", askedAt: T0 - 5_000 },
      { from: "id-alice-123456", to: "0123456789abcdef", messageId: "ask-restored", askedAt: T0 - 60_000 }
    ])
    assert.deepStrictEqual(buildView(input, context).openAsks.map((ask) => [ask.from, ask.to]), [["alice", "01234567"], ["alice", "01234567"]])
    assert.strictEqual(input.sessions[0]?.lastActivityAt, null, "lastActivity 0 means none")
    assert.deepStrictEqual(input.queues, { mailbox: 4, staging: 5, outbox: 6 })
    assert.deepStrictEqual(input.totals, { routed: 10, refused: 3, messagesPerSecond: 1.5 })
  })

  it("totals every open ask, also those past the 100 the broker lists; stuck counts the listed ones", () => {
    const listed = Array.from({ length: 100 }, (_, i) => ({
      messageId: `ask-${i}`,
      from: { id: "id-alice-123456", name: "alice" },
      to: { id: "0123456789abcdef" },
      askedAt: T0 - 60_000 + i,
      deadline: T0 + 60_000
    }))
    const input = fromSnapshot({ ...snapshot, askCount: 250, asks: listed })
    assert.strictEqual(input.openAsks.length, 100)
    const view = buildView(input, {
      now: T0,
      stuckAfterMs: 30_000,
      connection: { state: "connected", detail: "connected" },
      socketPath: "/tmp/broker.sock"
    })
    assert.strictEqual(view.totals.openAsks, 250)
    assert.strictEqual(view.totals.stuckAsks, 100)
    assert.strictEqual(view.openAsks.length, 100)
  })

  it("draws refused sends with the routed ones, in time order, marked with their code", () => {
    const input = fromSnapshot(snapshot)
    assert.deepStrictEqual(input.traffic.map((t) => [t.messageId, t.to, t.outcome]), [
      ["ask-1", "0123456789abcdef", "delivered"],
      ["m-x", "ghost", "E_TARGET_NOT_FOUND"],
      ["r-1", "id-alice-123456", "queued"]
    ])
    assert.strictEqual(input.traffic[2]?.replyTo, "ask-0")
    // A party that is not live (it left) goes by its name.
    const departed = fromSnapshot({ ...snapshot, sessions: [row("0123456789abcdef", undefined)] })
    assert.strictEqual(departed.traffic[0]?.from, "alice")
  })

  it("draws two sessions of one name in different groups on two lanes, each labelled with its group", () => {
    const worker = (id: string, group: string): SessionRow => ({ ...row(id, "worker"), group })
    const view = buildView(
      fromSnapshot({
        ...snapshot,
        sessionCount: 3,
        sessions: [row("id-alice-123456", "alice"), worker("w-build", "build"), worker("w-review", "review")],
        asks: [],
        refusals: [],
        traffic: [
          { seq: 1, at: T0 - 2, from: { id: "id-alice-123456", name: "alice" }, to: { id: "w-build", name: "worker" }, kind: "message", messageId: "m-1", outcome: "delivered" },
          { seq: 2, at: T0 - 1, from: { id: "w-review", name: "worker" }, to: { id: "id-alice-123456", name: "alice" }, kind: "message", messageId: "m-2", outcome: "delivered" }
        ]
      }),
      context
    )
    assert.strictEqual(view.chart.match(/class="lane-name"/g)?.length, 3)
    assert.include(view.chart, "<title>alice → worker · build: message m-1</title>")
    assert.include(view.chart, "<title>worker · review → alice: message m-2</title>")
  })

  it.effect("folds a watch into one current snapshot per element", () =>
    Effect.gen(function*() {
      const events: ReadonlyArray<BrokerSnapshot | ObserveEvent> = [
        snapshot,
        { type: "traffic", entries: [{ ...askEntry, seq: 3, messageId: "m-3", kind: "message" }], missed: 0 },
        { type: "state", state: { ...snapshot, sessionCount: 1, sessions: [row("id-alice-123456", "alice")] } }
      ]
      const folded = yield* Stream.runCollect(currentSnapshots(Stream.fromIterable(events)))
      assert.deepStrictEqual(folded.map((s) => s.traffic.length), [2, 3, 3])
      assert.deepStrictEqual(folded.map((s) => s.sessionCount), [2, 2, 1])
    }))
})
