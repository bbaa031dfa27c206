/**
 * What the `intercom ui` page shows for a snapshot (src/ui/View.ts) and the
 * sequence chart's markup (src/ui/SequenceChart.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChartLane, escapeXml, lanesOf, renderChart } from "../../src/ui/SequenceChart.ts"
import { buildView, type InputSession, type InputTraffic, type ViewContext, type ViewInput } from "../../src/ui/View.ts"

const T0 = 1_800_000_000_000
const STUCK = 30_000

const session = (id: string, name: string): InputSession => ({
  id,
  name,
  group: "default",
  status: "idle",
  health: "ok",
  pendingAsks: 0,
  lastActivityAt: T0,
  messagesIn: 0,
  messagesOut: 0,
  ratePerSecond: null
})

const traffic = (overrides: Partial<InputTraffic> & Pick<InputTraffic, "at" | "from" | "to" | "kind" | "messageId">): InputTraffic => ({
  replyTo: null,
  outcome: "delivered",
  ...overrides
})

const input = (overrides: Partial<ViewInput> = {}): ViewInput => ({
  at: T0,
  sessionCount: 2,
  sessions: [session("id-a", "alice"), session("id-b", "bob")],
  queues: { mailbox: 1, staging: 2, outbox: 3 },
  askCount: overrides.openAsks?.length ?? 0,
  openAsks: [],
  refusals: [],
  traffic: [],
  totals: { routed: 0, refused: 0, messagesPerSecond: 0 },
  ...overrides
})

const context = (now: number): ViewContext => ({
  now,
  stuckAfterMs: STUCK,
  connection: { state: "connected", detail: "connected" },
  socketPath: "/tmp/broker.sock"
})

describe("ui view", () => {
  it("shows session ids as names in every table and ages from the view's time", () => {
    const view = buildView(
      input({
        openAsks: [{ from: "id-a", to: "id-b", messageId: "ask-1", askedAt: T0 }],
        refusals: [{ at: T0, from: "id-a", target: "carol", code: "E_NOT_FOUND", reason: "Session not found" }],
        traffic: [traffic({ at: T0, from: "id-a", to: "id-b", kind: "ask", messageId: "ask-1" })]
      }),
      context(T0 + 5_000)
    )
    assert.deepStrictEqual(view.openAsks, [{ from: "alice", to: "bob", messageId: "ask-1", askedAt: T0, ageMs: 5_000, stuck: false }])
    assert.deepStrictEqual(view.refusals, [{ at: T0, from: "alice", target: "carol", code: "E_NOT_FOUND", reason: "Session not found" }])
    assert.strictEqual(view.exchanges[0]?.from, "alice")
    assert.strictEqual(view.sessions[0]?.lastActivityAgoMs, 5_000)
    assert.deepInclude(view.totals, { sessions: 2, openAsks: 1, stuckAsks: 0, mailbox: 1, staging: 2, outbox: 3 })
  })

  it("joins an ask with its reply: answered, with the time it took", () => {
    const view = buildView(
      input({
        traffic: [
          traffic({ at: T0, from: "id-a", to: "id-b", kind: "ask", messageId: "ask-1" }),
          traffic({ at: T0 + 1_200, from: "id-b", to: "id-a", kind: "reply", messageId: "rep-1", replyTo: "ask-1" })
        ]
      }),
      context(T0 + 2_000)
    )
    assert.deepStrictEqual(view.exchanges, [
      { from: "alice", to: "bob", messageId: "ask-1", askedAt: T0, latencyMs: 1_200, state: "answered" }
    ])
    assert.include(view.chart, "answered in 1.2 s")
  })

  it("marks an ask open past the threshold stuck — in the asks table, the joined table and the chart — and not before", () => {
    const snapshot = input({
      openAsks: [{ from: "id-a", to: "id-b", messageId: "ask-9", askedAt: T0 }],
      traffic: [traffic({ at: T0, from: "id-a", to: "id-b", kind: "ask", messageId: "ask-9" })]
    })
    const before = buildView(snapshot, context(T0 + STUCK - 1))
    assert.strictEqual(before.openAsks[0]?.stuck, false)
    assert.strictEqual(before.exchanges[0]?.state, "open")
    assert.notInclude(before.chart, "stuck")
    const after = buildView(snapshot, context(T0 + STUCK))
    assert.strictEqual(after.openAsks[0]?.stuck, true)
    assert.strictEqual(after.totals.stuckAsks, 1)
    assert.strictEqual(after.exchanges[0]?.state, "stuck")
    assert.include(after.chart, `class="arrow ask stuck" data-message-id="ask-9"`)
    assert.include(after.chart, "STUCK, open 30.0 s")
  })

  it("keeps an open ask older than the traffic ring in the joined table", () => {
    const view = buildView(
      input({ openAsks: [{ from: "id-a", to: "id-b", messageId: "old-ask", askedAt: T0 - 600_000 }] }),
      context(T0)
    )
    assert.deepStrictEqual(view.exchanges, [
      { from: "alice", to: "bob", messageId: "old-ask", askedAt: T0 - 600_000, latencyMs: null, state: "stuck" }
    ])
  })

  it("calls an ask refused by the broker refused, and one neither open nor answered closed", () => {
    const view = buildView(
      input({
        traffic: [
          traffic({ at: T0, from: "id-a", to: "nobody", kind: "ask", messageId: "ask-r", outcome: "E_NOT_FOUND" }),
          traffic({ at: T0 + 1, from: "id-a", to: "id-b", kind: "ask", messageId: "ask-c" })
        ]
      }),
      context(T0 + 10)
    )
    assert.deepStrictEqual(view.exchanges.map((row) => [row.messageId, row.state]), [["ask-c", "closed"], ["ask-r", "refused"]])
    assert.include(view.chart, `class="arrow ask refused"`)
    assert.include(view.chart, "E_NOT_FOUND")
  })

  it("draws one arrow per routed message between the lanes of its sessions, and a lane for a refused target", () => {
    const view = buildView(
      input({
        traffic: [
          traffic({ at: T0, from: "id-a", to: "id-b", kind: "message", messageId: "m-1" }),
          traffic({ at: T0 + 1, from: "id-b", to: "ghost", kind: "message", messageId: "m-2", outcome: "E_NOT_FOUND" })
        ]
      }),
      context(T0)
    )
    assert.strictEqual(view.chart.match(/<g class="arrow /g)?.length, 2)
    const lane = (name: string): ChartLane => ({ key: name, name, group: undefined })
    assert.deepStrictEqual(
      lanesOf([lane("alice"), lane("bob")], [{ at: 0, from: lane("bob"), to: lane("ghost"), kind: "message", messageId: "m", note: "", stuck: false, refused: true }]),
      [lane("alice"), lane("bob"), lane("ghost")]
    )
    assert.include(view.chart, ">ghost</text>")
  })

  it("gives two sessions of one name in different groups a lane each, labelled with their group", () => {
    const worker = (id: string, group: string): InputSession => ({ ...session(id, "worker"), group })
    const view = buildView(
      input({
        sessionCount: 3,
        sessions: [session("id-a", "alice"), worker("id-w1", "build"), worker("id-w2", "review")],
        openAsks: [{ from: "id-a", to: "id-w2", messageId: "ask-2", askedAt: T0 }],
        traffic: [
          traffic({ at: T0, from: "id-a", to: "id-w1", kind: "message", messageId: "m-1" }),
          traffic({ at: T0 + 1, from: "id-a", to: "id-w2", kind: "ask", messageId: "ask-2" })
        ]
      }),
      context(T0 + 10)
    )
    const laneNames = [...view.chart.matchAll(/<text class="lane-name"[^>]*><title>([^<]*)<\/title>/g)].map((m) => m[1])
    assert.deepStrictEqual(laneNames, ["alice", "worker · build", "worker · review"], "three lanes, the workers' told apart")
    assert.include(view.chart, `class="lane-group" x="`)
    assert.include(view.chart, ">build</text>")
    assert.include(view.chart, ">review</text>")
    // Each arrow ends on its own worker's lane: the second lane is left of the third.
    const endOf = (id: string) => Number(new RegExp(`data-message-id="${id}"[^]*?<line x1="[\\d.]+" y1="[\\d.]+" x2="([\\d.]+)"`).exec(view.chart)?.[1])
    assert.isBelow(endOf("m-1"), endOf("ask-2"))
    assert.include(view.chart, "<title>alice → worker · review: ask ask-2")
    // The tables name them the same way.
    assert.strictEqual(view.openAsks[0]?.to, "worker · review")
    assert.strictEqual(view.exchanges[0]?.to, "worker · review")
  })

  it("keeps one lane, without a group, for a name only one group uses, and for a departed session of that name", () => {
    const view = buildView(
      input({
        traffic: [
          traffic({ at: T0, from: "id-a", to: "id-b", kind: "message", messageId: "m-1" }),
          traffic({ at: T0 + 1, from: "bob", to: "id-a", kind: "message", messageId: "m-2" })
        ]
      }),
      context(T0)
    )
    assert.strictEqual(view.chart.match(/class="lane-name"/g)?.length, 2)
    assert.notInclude(view.chart, "lane-group")
  })

  it("escapes session names and ids in the chart, so a name cannot inject markup", () => {
    const evil = `<img src=x onerror="alert(1)">&'`
    const evilLane: ChartLane = { key: "e", name: evil, group: evil }
    const bob: ChartLane = { key: "b", name: "bob", group: undefined }
    const svg = renderChart([evilLane, bob], [{ at: T0, from: evilLane, to: bob, kind: "message", messageId: `"><script>`, note: evil, stuck: false, refused: false }])
    assert.notInclude(svg, "<img")
    assert.notInclude(svg, "<script")
    assert.include(svg, escapeXml(evil))
    assert.strictEqual(escapeXml(`<a href="x">'&`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;")
  })

  it("shows empty tables and says the link state before the first snapshot", () => {
    const view = buildView(undefined, { ...context(T0), connection: { state: "connecting", detail: "connecting…" } })
    assert.deepStrictEqual([view.sessions, view.openAsks, view.exchanges, view.refusals], [[], [], [], []])
    assert.strictEqual(view.connection.state, "connecting")
    assert.include(view.chart, "no traffic yet")
  })
})
