/**
 * Topics in the session runtime (C-TOP-1…17) over a scripted client: the
 * receiver rules (one record per sender and topic, stale and unsubscribed
 * records dropped quietly, `update` quiet, `blocker`/`decision` steer,
 * `release` only for `awaitRelease`, one interruption per revision, no
 * replay for late subscribers, disconnect is not a release), the tool
 * actions and their errors, an answer the broker cut said to be incomplete,
 * and the host's topic store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { TopicEntry, TopicRecord } from "../../src/protocol/topics.ts"
import { Host, type Inbound, type SavedTopicState } from "../../src/session/Host.ts"
import { IntercomSession, type IntercomSessionService } from "../../src/session/IntercomSession.ts"
import { TopicBoard } from "../../src/session/TopicBoard.ts"
import { QUIET_SAVE_DELAY, TRUNCATED_NOTE } from "../../src/session/Topics.ts"
import { B, inboundMessage, makeFakeClient, makeRecordingHost, settle, withPeers } from "./support.ts"

const entry = (
  topic: string,
  revision: number,
  event: TopicRecord["event"] = "update",
  extra: Partial<TopicRecord> & { readonly from?: string; readonly available?: boolean } = {}
): TopicEntry => {
  const { from, available, ...rest } = extra
  return {
    from: { id: from ?? "pub-1", name: from ?? "pub" },
    record: { topic, text: `${event} ${revision}`, event, revision, updatedAt: 100 + revision, ...rest },
    available: available ?? true
  }
}

const released = (topic: string, revision: number, available = true) =>
  entry(topic, revision, "release", { resource: "tab-4", ownership: "released", available })

/** Everything the host was handed so far. */
const delivered = (inbox: Queue.Queue<Inbound>) =>
  Effect.map(Queue.clear(inbox), (items) => items.map((inbound) => [inbound.intent, inbound.message.id]))

describe("the topic board (C-TOP-6…12)", () => {
  it("keeps one record per sender and topic, ignores lower revisions and unsubscribed topics", () => {
    const board = new TopicBoard()
    assert.strictEqual(board.receive(entry("t", 1))._tag, "Ignored") // not subscribed (C-TOP-7)
    board.subscribe("t", false, [])
    assert.strictEqual(board.receive(entry("t", 3))._tag, "Quiet")
    assert.strictEqual(board.receive(entry("t", 2))._tag, "Ignored") // stale (C-TOP-6)
    assert.strictEqual(board.receive(entry("t", 1, "update", { from: "pub-2" }))._tag, "Quiet")
    assert.deepStrictEqual(board.held("t").map((h) => [h.entry.from.id, h.entry.record.revision]), [["pub-1", 3], ["pub-2", 1]])
  })

  it("interrupts for blocker and decision, for release only with awaitRelease, at most once per revision, never when unavailable", () => {
    const board = new TopicBoard()
    board.subscribe("plain", false, [])
    board.subscribe("waiting", true, [])
    assert.strictEqual(board.receive(entry("plain", 1, "update"))._tag, "Quiet")
    assert.strictEqual(board.receive(entry("plain", 2, "blocker"))._tag, "Interrupt")
    assert.strictEqual(board.receive(entry("plain", 2, "blocker"))._tag, "Quiet") // C-TOP-10
    assert.strictEqual(board.receive(entry("plain", 3, "decision"))._tag, "Interrupt")
    assert.strictEqual(board.receive(released("plain", 4))._tag, "Quiet")
    assert.strictEqual(board.receive(released("waiting", 1))._tag, "Interrupt")
    assert.strictEqual(board.receive(entry("waiting", 2, "blocker", { available: false }))._tag, "Quiet") // C-TOP-12
  })

  it("a subscription's current records never interrupt afterwards (C-TOP-11)", () => {
    const board = new TopicBoard()
    board.subscribe("t", true, [entry("t", 2, "blocker"), entry("other", 9, "blocker")])
    assert.strictEqual(board.receive(entry("t", 2, "blocker"))._tag, "Quiet")
    assert.strictEqual(board.receive(entry("t", 3, "blocker"))._tag, "Interrupt")
    assert.deepStrictEqual(board.held().map((h) => h.entry.record.topic), ["t"])
  })
})

describe("topics in the session (C-TOP-6…14)", () => {
  it.effect("update only replaces the quiet record; blocker steers a busy session and triggers an idle one, once per revision", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* session.intercom({ action: "subscribe", topic: "build" })
      yield* settle
      yield* client.topicRecord(entry("build", 1, "update"))
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), []) // C-TOP-8
      yield* client.topicRecord(entry("build", 2, "blocker"))
      yield* client.topicRecord(entry("build", 2, "blocker")) // the same revision again (C-TOP-10)
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), [["trigger", "topic:pub-1:build:2"]])
      yield* session.setStatus("thinking")
      yield* client.topicRecord(entry("build", 3, "decision"))
      yield* client.topicRecord(entry("build", 1, "blocker")) // stale (C-TOP-6)
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), [["steer", "topic:pub-1:build:3"]])
      // `topics` shows the broker's current records of the group, and the subscriptions.
      client.topicEntries = [entry("build", 3, "decision")]
      const shown = yield* session.intercom({ action: "topics" })
      assert.strictEqual(shown.text, "- build — pub, revision 3, decision: decision 3\nSubscriptions: build.")
    }))

  it.effect("release interrupts only awaitRelease subscriptions; other topics are dropped quietly; disconnect is not a release", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* session.intercom({ action: "subscribe", topic: "quiet" })
      yield* session.intercom({ action: "subscribe", topic: "tab", awaitRelease: true })
      assert.deepStrictEqual(client.topicCalls, ["subscribe quiet", "subscribe tab awaitRelease"])
      yield* settle
      yield* client.topicRecord(released("quiet", 1))
      yield* client.topicRecord(entry("elsewhere", 1, "blocker")) // not subscribed (C-TOP-7)
      yield* client.topicRecord(entry("tab", 1, "update", { resource: "tab-4", ownership: "held", available: false }))
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), [])
      const shown = yield* session.intercom({ action: "topics" })
      assert.notInclude(shown.text, "elsewhere")
      yield* client.topicRecord(released("tab", 2))
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), [["trigger", "topic:pub-1:tab:2"]])
    }))

  it.effect("a late subscriber reads current state without replayed interruptions (C-TOP-11)", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      client.topicEntries = [entry("t", 4, "blocker")]
      const result = yield* session.intercom({ action: "subscribe", topic: "t" })
      assert.include(result.text, "Subscribed to t. Current state:\n- t — pub, revision 4, blocker: blocker 4")
      yield* settle
      yield* client.topicRecord(entry("t", 4, "blocker")) // re-sent after a reconnect
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), [])
    }))

  it.effect("an answer the broker cut to fit one frame is shown as incomplete, by subscribe and by topics", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.topicEntries = [entry("t", 4, "blocker")]
      client.topicsTruncated = true
      const subscribed = yield* session.intercom({ action: "subscribe", topic: "t" })
      assert.strictEqual(
        subscribed.text,
        `Subscribed to t. Current state:\n- t — pub, revision 4, blocker: blocker 4\n${TRUNCATED_NOTE}`
      )
      assert.strictEqual(subscribed.details?.["truncated"], true)
      const all = yield* session.intercom({ action: "topics" })
      assert.strictEqual(
        all.text,
        `- t — pub, revision 4, blocker: blocker 4\n${TRUNCATED_NOTE} Name one topic to see only its records.\nSubscriptions: t.`
      )
      const one = yield* session.intercom({ action: "topics", topic: "t" })
      assert.include(one.text, `${TRUNCATED_NOTE}\nSubscriptions: t.`)
      // A complete answer says nothing of the kind.
      client.topicsTruncated = false
      assert.notInclude((yield* session.intercom({ action: "topics" })).text, "Incomplete")
    }))

  it.effect("direct messages are never filtered by topic subscriptions (C-TOP-14)", () =>
    Effect.gen(function*() {
      const { client, host } = yield* withPeers()
      yield* client.push(inboundMessage(B, "m-1", "hello"))
      yield* settle
      assert.deepStrictEqual(yield* delivered(host.inbox), [["trigger", "m-1"]])
    }))
})

describe("topic tool actions (C-TOP-1, 2, 4, 5, 13, 16)", () => {
  it.effect("publish reports the broker's counts with the acceptance note", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const result = yield* session.intercom({ action: "publish", topic: "build", message: "green on main" })
      assert.isFalse(result.isError)
      assert.strictEqual(
        result.text,
        "Current state saved for build. 1/2 subscribed deliveries accepted. Accepted means written to the subscriber's connection, not that it was read."
      )
      assert.deepStrictEqual(client.topicCalls, ["publish build update r1"])
      assert.deepStrictEqual(result.details["revision"], 1)
    }))

  it.effect("invalid publications and missing topics are refused with the rule, and nothing is published", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const cases: ReadonlyArray<readonly [Record<string, string>, RegExp]> = [
        [{ action: "publish", message: "x" }, /publish needs an exact topic/],
        [{ action: "subscribe" }, /subscribe needs an exact topic/],
        [{ action: "unsubscribe", topic: " " }, /unsubscribe needs an exact topic/],
        [{ action: "publish", topic: "t", message: "x", ownership: "held" }, /ownership needs a resource/],
        [{ action: "publish", topic: "t", message: "x", event: "release" }, /needs a resource and ownership "released"/],
        [{ action: "publish", topic: "t", message: "" }, /text is empty/],
        [{ action: "publish", topic: "t", message: "x", replyTo: "m-1" }, /cannot carry replyTo/]
      ]
      for (const [params, expected] of cases) {
        const result = yield* session.intercom({ action: params["action"] ?? "", ...params })
        assert.isTrue(result.isError, JSON.stringify(params))
        assert.match(result.text, expected)
      }
      assert.deepStrictEqual(client.topicCalls, [])
    }))

  it.effect("a broker without topics: every topic action is unavailable, topics shows the last records, messaging works (C-TOP-16)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.intercom({ action: "subscribe", topic: "t" })
      yield* settle
      yield* client.topicRecord(entry("t", 1))
      yield* settle
      client.topicsAvailable = false
      for (const action of ["publish", "subscribe", "unsubscribe"]) {
        const result = yield* session.intercom({ action, topic: "t", message: "x" })
        assert.isTrue(result.isError)
        assert.match(result.text, /^Topics are unavailable: the running broker does not support topics/)
      }
      const shown = yield* session.intercom({ action: "topics" })
      assert.isTrue(shown.isError)
      assert.include(shown.text, "Last saved records:\n- t — pub, revision 1, update: update 1")
      const sent = yield* session.intercom({ action: "send", to: "B", message: "still here" })
      assert.isFalse(sent.isError)
    }))
})

/** A session whose host has a topic store backed by `saved`; built in its own Scope. */
const storedSession = (initial: SavedTopicState | undefined | "broken") =>
  Effect.gen(function*() {
    const client = yield* makeFakeClient("self-0000-0000")
    const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "m" })
    const saves: Array<SavedTopicState> = []
    const warnings: Array<string> = []
    const service = {
      ...host.service,
      topicStore: {
        load: initial === "broken" ? Effect.fail("unreadable entry") : Effect.succeed(initial),
        save: (state: SavedTopicState) => Effect.sync(() => void saves.push(state)),
        warn: (text: string) => Effect.sync(() => void warnings.push(text))
      }
    }
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer().pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(service)))
      ),
      scope
    )
    const session: IntercomSessionService = Context.get(context, IntercomSession)
    return { client, host, session, saves, warnings, scope }
  })

describe("the host's topic store (C-TOP-15, C-TOP-17)", () => {
  it.effect("subscriptions and received records are saved; a new generation restores them without interrupting", () =>
    Effect.gen(function*() {
      const first = yield* storedSession(undefined)
      yield* first.session.intercom({ action: "subscribe", topic: "t", awaitRelease: true })
      yield* settle
      yield* first.client.topicRecord(entry("t", 2, "blocker"))
      yield* settle
      const last = first.saves.at(-1)
      assert.deepStrictEqual(last?.subscriptions, [{ topic: "t", awaitRelease: true }])
      assert.deepStrictEqual(last?.received.map((r) => [r.entry.record.revision, r.notifiedRevision]), [[2, 2]])
      yield* Scope.close(first.scope, Exit.void)

      const second = yield* storedSession(last)
      yield* settle
      const shown = yield* second.session.intercom({ action: "topics" })
      assert.include(shown.text, "Subscriptions: t (awaitRelease).")
      yield* second.client.topicRecord(entry("t", 2, "blocker")) // already notified before the reload
      yield* settle
      assert.deepStrictEqual(yield* delivered(second.host.inbox), [])
      yield* Scope.close(second.scope, Exit.void)
    }))

  it.effect("quiet records are saved once per burst, only when changed; the generation's end saves what waits; a resume restores the latest", () =>
    Effect.gen(function*() {
      const first = yield* storedSession(undefined)
      yield* first.session.intercom({ action: "subscribe", topic: "t" })
      yield* settle
      const afterSubscribe = first.saves.length
      for (let revision = 1; revision <= 50; revision++) yield* first.client.topicRecord(entry("t", revision))
      yield* settle
      assert.strictEqual(first.saves.length, afterSubscribe, "quiet records wait for the burst to end")
      yield* TestClock.adjust(QUIET_SAVE_DELAY)
      yield* settle
      assert.strictEqual(first.saves.length, afterSubscribe + 1, "one save for the burst")
      assert.deepStrictEqual(first.saves.at(-1)?.received.map((r) => r.entry.record.revision), [50])
      // The same record again changes nothing: nothing is saved.
      yield* first.client.topicRecord(entry("t", 50))
      yield* settle
      yield* TestClock.adjust(QUIET_SAVE_DELAY)
      yield* settle
      assert.strictEqual(first.saves.length, afterSubscribe + 1)
      // A second burst, cut short by the generation's end: its latest state is saved then.
      for (let revision = 51; revision <= 80; revision++) yield* first.client.topicRecord(entry("t", revision))
      yield* settle
      yield* Scope.close(first.scope, Exit.void)
      assert.strictEqual(first.saves.length, afterSubscribe + 2)
      const last = first.saves.at(-1)
      assert.deepStrictEqual(last?.received.map((r) => r.entry.record.revision), [80])

      const second = yield* storedSession(last)
      second.client.topicsAvailable = false
      const shown = yield* second.session.intercom({ action: "topics" })
      assert.include(shown.text, "Last saved records:\n- t — pub, revision 80, update: update 80")
      yield* Scope.close(second.scope, Exit.void)
      assert.strictEqual(second.saves.length, 0, "a restored state unchanged is not saved again")
    }))

  it.effect("an interrupting record is saved at once, with the quiet changes before it", () =>
    Effect.gen(function*() {
      const unit = yield* storedSession(undefined)
      yield* unit.session.intercom({ action: "subscribe", topic: "t" })
      yield* settle
      const afterSubscribe = unit.saves.length
      yield* unit.client.topicRecord(entry("t", 1))
      yield* unit.client.topicRecord(entry("t", 2, "blocker", { from: "pub-2" }))
      yield* settle
      assert.strictEqual(unit.saves.length, afterSubscribe + 1)
      assert.deepStrictEqual(
        unit.saves.at(-1)?.received.map((r) => [r.entry.from.id, r.entry.record.revision, r.notifiedRevision]),
        [["pub-1", 1, 0], ["pub-2", 2, 2]]
      )
      yield* TestClock.adjust(QUIET_SAVE_DELAY)
      yield* settle
      assert.strictEqual(unit.saves.length, afterSubscribe + 1, "the quiet change was saved with it")
      yield* Scope.close(unit.scope, Exit.void)
    }))

  it.effect("a restore failure is a warning, and messaging stays usable", () =>
    Effect.gen(function*() {
      const broken = yield* storedSession("broken")
      broken.client.sessions = [...broken.client.sessions, B]
      assert.deepStrictEqual(broken.warnings, ["Intercom topics: saved topic state could not be restored; messaging is unaffected"])
      const sent = yield* broken.session.intercom({ action: "send", to: "B", message: "hi" })
      assert.isFalse(sent.isError)
      yield* Scope.close(broken.scope, Exit.void)
    }))

  it.effect("the session changed during a topic action: the error says so and nothing is saved (C-TOP-17)", () =>
    Effect.gen(function*() {
      const unit = yield* storedSession(undefined)
      unit.client.onPublish = Scope.close(unit.scope, Exit.void)
      const result = yield* unit.session.act({ action: "publish", topic: "t", message: "x" })
      assert.isTrue(result.isError)
      assert.strictEqual(result.text, "Session changed; no topic state saved in this session.")
      assert.deepStrictEqual(unit.saves, [])
    }))
})
