/**
 * End to end over a real in-process broker: two (or three) sessions, each an
 * `IntercomSession` over its own `IntercomClient`, with simulated hosts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Queue, Scope } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { Host, headless, type Inbound } from "../../src/session/Host.ts"
import {
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  sessionRegistration
} from "../../src/session/IntercomSession.ts"
import { type TestBroker, withBroker } from "../support/broker.ts"

interface Peer {
  readonly id: string
  readonly session: IntercomSessionService
  readonly inbox: Queue.Queue<Inbound>
  /** Ends this session's generation (and its client: unregister, disconnect). */
  readonly close: Effect.Effect<void>
}

const peer = (
  broker: TestBroker,
  id: string,
  name: string | undefined,
  options: IntercomSessionOptions = {}
): Effect.Effect<Peer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const inbox = yield* Queue.unbounded<Inbound>()
    const identity = { name, cwd: "/tmp/project", model: "test-model" }
    const client = IntercomClient.layer({
      agentDir: broker.root,
      intercomDir: broker.intercomDir,
      socketPath: broker.socketPath,
      sessionId: id,
      registration: sessionRegistration({ sessionId: id, identity, pid: process.pid, startedAt: Date.now() }),
      launch: false
    })
    const host = Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound)))
    const scope = yield* Scope.fork(yield* Effect.scope)
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer(options).pipe(Layer.provide(Layer.merge(client, host))),
      scope
    )
    return { id, session: Context.get(context, IntercomSession), inbox, close: Scope.close(scope, Exit.void) }
  })

const pair = (options: IntercomSessionOptions = {}) =>
  Effect.gen(function*() {
    const broker = yield* withBroker({ idleExit: null })
    const a = yield* peer(broker, "aaaaaaaa-0000-4000-8000-000000000001", "A", options)
    const b = yield* peer(broker, "bbbbbbbb-0000-4000-8000-000000000002", "B", options)
    // Both register (lazily, on first use).
    yield* a.session.status
    yield* b.session.status
    return { broker, a, b }
  })

describe("session over a real broker", () => {
  it.live("A asks B; B replies with no `to` in its triggered turn; A's ask returns the reply", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* Effect.forkChild(a.session.intercom({ action: "ask", to: "B", message: "Retry POST too?" }))
      const inbound = yield* Queue.take(b.inbox)
      assert.strictEqual(inbound.intent, "trigger")
      assert.strictEqual(
        inbound.text,
        `**From A** (/tmp/project)\n\nTo reply, use the intercom tool: intercom({ action: "reply", message: "..." })\n\nRetry POST too?`
      )
      const pending = yield* b.session.intercom({ action: "pending" })
      assert.match(pending.text, /^\*\*Pending asks:\*\*\n- A · [0-9a-f-]{36} · \ds ago · Retry POST too\?/)
      yield* b.session.beginTurn()
      const replied = yield* b.session.intercom({ action: "reply", message: "Only GET/PUT/DELETE — never POST." })
      assert.deepStrictEqual([replied.text, replied.isError], ["Reply sent to A", false])
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\nOnly GET/PUT/DELETE — never POST.", false])
      // The reply resolved the waiter; A's host never saw it as an inbound message.
      assert.strictEqual(yield* Queue.size(a.inbox), 0)
      assert.strictEqual((yield* b.session.intercom({ action: "pending" })).text, "No unresolved inbound asks.")
    }))

  it.live("list, status and send render as in the docs", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      yield* b.session.setStatus("thinking")
      yield* Effect.sleep("50 millis") // presence reaches the broker
      const list = yield* a.session.intercom({ action: "list" })
      assert.strictEqual(
        list.text,
        "**Current session:**\n• A (aaaaaaaa) — /tmp/project (test-model) [self, idle]\n\n" +
          "**Other sessions:**\n• B (bbbbbbbb) — /tmp/project (test-model) [same cwd, thinking]"
      )
      const status = yield* a.session.intercom({ action: "status" })
      assert.strictEqual(status.text, `**Intercom Status:**\nConnected: Yes\nSession ID: ${a.id}\nActive sessions: 2`)
      const sent = yield* a.session.intercom({ action: "send", to: "bbbbbbbb", message: "Check UserService" })
      assert.deepStrictEqual([sent.text, sent.isError], ["Message sent to bbbbbbbb", false])
      const inbound = yield* Queue.take(b.inbox)
      assert.deepStrictEqual([inbound.intent, inbound.text], ["steer", "**From A** (/tmp/project)\n\nCheck UserService"])
      const self = yield* a.session.intercom({ action: "send", to: "a", message: "me?" })
      assert.deepStrictEqual([self.text, self.isError], ["Cannot message the current session", true])
      const ghost = yield* a.session.intercom({ action: "send", to: "nobody", message: "hello?" })
      assert.deepStrictEqual([ghost.text, ghost.isError], [`Message to "nobody" was not delivered: Session not found`, true])
    }))

  it.live("an unnamed session is listed and reachable under its fallback alias", () =>
    Effect.gen(function*() {
      const { a, broker } = yield* pair()
      const anonymous = yield* peer(broker, "session-c0ffee00-1111", undefined)
      yield* anonymous.session.status
      const list = yield* a.session.intercom({ action: "list" })
      assert.include(list.text, "• subagent-chat-c0ffee00 (session-) — /tmp/project (test-model) [same cwd, idle]")
      const sent = yield* a.session.intercom({ action: "send", to: "subagent-chat-c0ffee00", message: "hi" })
      assert.strictEqual(sent.text, "Message sent to subagent-chat-c0ffee00")
      assert.strictEqual((yield* Queue.take(anonymous.inbox)).message.content.text, "hi")
    }))

  it.live("the asked peer disconnecting ends the ask with `Reply peer disconnected before answering`", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* Effect.forkChild(a.session.intercom({ action: "ask", to: "B", message: "still there?" }))
      yield* Queue.take(b.inbox)
      yield* b.close
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], [`Reply peer disconnected before answering: ${b.id}`, true])
      assert.isFalse(yield* a.session.waiting)
    }))

  it.live("an interrupted ask sends cancel_ask: the broker then refuses the late reply", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* Effect.forkChild(a.session.ask({ to: "B", message: "q" }))
      yield* Queue.take(b.inbox)
      yield* Fiber.interrupt(asking)
      assert.isFalse(yield* a.session.waiting)
      yield* Effect.sleep("50 millis") // cancel_ask reaches the broker
      const late = yield* b.session.intercom({ action: "reply", message: "too late" })
      assert.deepStrictEqual([late.text, late.isError], [`Reply to "A" was not delivered: ${Reason.replyNoAsk}`, true])
    }))

  it.live("race on a real broker: parallel asks, one question on the wire, the winner gets its reply", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asks = yield* Effect.forEach([1, 2, 3], (n) =>
        Effect.forkChild(a.session.intercom({ action: "ask", to: "B", message: `q${n}` })))
      const inbound = yield* Queue.take(b.inbox)
      const losers = yield* Effect.forEach(
        asks.filter((_, index) => `q${index + 1}` !== inbound.message.content.text),
        Fiber.join
      )
      for (const loser of losers) assert.strictEqual(loser.text, "Already waiting for a reply")
      yield* b.session.beginTurn(inbound.message.id)
      yield* b.session.intercom({ action: "reply", message: `answer to ${inbound.message.content.text}` })
      const winner = asks[Number(inbound.message.content.text.slice(1)) - 1]
      if (winner === undefined) return assert.fail("no winner")
      assert.strictEqual((yield* Fiber.join(winner)).text, `**Reply from B:**\nanswer to ${inbound.message.content.text}`)
      assert.strictEqual(yield* Queue.size(b.inbox), 0, "no second question reached B")
    }))

  it.live("a mutual ask is refused by the broker and reported as not delivered", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* Effect.forkChild(a.session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* Queue.take(b.inbox)
      const back = yield* b.session.intercom({ action: "ask", to: "A", message: "and you?" })
      assert.deepStrictEqual([back.text, back.isError], [`Message to "A" was not delivered: ${Reason.mutualAsk}`, true])
      assert.isFalse(yield* b.session.waiting)
      yield* Fiber.interrupt(asking)
    }))
})
