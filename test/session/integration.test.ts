/**
 * End to end: two (or three) sessions, each an `IntercomSession` over its own
 * `IntercomClient`, with headless hosts, through the real broker core.
 *
 * On the in-memory network under TestClock: every action runs as a step,
 * until the world is idle, so "the broker has the presence" or "the broker
 * has handled the cancel_ask" hold when the step returns — no waiting. One
 * smoke test runs the same conversation over a real Unix socket.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Queue, Scope } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { Host, headless, type Inbound } from "../../src/session/Host.ts"
import { deliveryGuidance } from "../../src/session/health.ts"
import {
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  sessionRegistration
} from "../../src/session/IntercomSession.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { registerFrame, withBroker } from "../support/broker.ts"
import { closeOnSimulatedTime, type MemoryBroker, settle, step, withMemoryBroker } from "../support/memory.ts"

interface Peer {
  readonly id: string
  readonly session: IntercomSessionService
  readonly inbox: Queue.Queue<Inbound>
  /** Ends this session's generation (and its client: unregister, disconnect). */
  readonly close: Effect.Effect<void>
}

type Transport = Pick<IntercomClientOptions, "agentDir" | "intercomDir" | "socketPath" | "dial">

/** A session over its own client; `close` runs on simulated time in the in-memory world. */
const peer = (
  transport: Transport,
  id: string,
  name: string | undefined,
  options: IntercomSessionOptions & { readonly simulated?: boolean } = {}
): Effect.Effect<Peer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { simulated = true, ...sessionOptions } = options
    const inbox = yield* Queue.unbounded<Inbound>()
    const identity = { name, cwd: "/tmp/project", model: "test-model" }
    const client = IntercomClient.layer({
      ...transport,
      sessionId: id,
      registration: sessionRegistration({ sessionId: id, identity, pid: 4242, startedAt: 0 }),
      launch: false
    }).pipe(Layer.orDie) // options a client cannot use are a defect of the test
    const host = Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound)))
    const scope = yield* Scope.make()
    const close = simulated ? closeOnSimulatedTime(scope) : Scope.close(scope, Exit.void)
    yield* Effect.addFinalizer(() => close)
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer(sessionOptions).pipe(Layer.provide(Layer.merge(client, host))),
      scope
    )
    return { id, session: Context.get(context, IntercomSession), inbox, close }
  })

const inMemory = (broker: MemoryBroker): Transport => ({
  agentDir: "/mem",
  intercomDir: "/mem/intercom",
  socketPath: broker.address,
  dial: broker.dial
})

const A_ID = "aaaaaaaa-0000-4000-8000-000000000001"
const B_ID = "bbbbbbbb-0000-4000-8000-000000000002"

const pair = (options: IntercomSessionOptions = {}) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker({ idleExit: null })
    const a = yield* peer(inMemory(broker), A_ID, "A", options)
    const b = yield* peer(inMemory(broker), B_ID, "B", options)
    // Both register (lazily, on first use).
    yield* settle(a.session.status)
    yield* settle(b.session.status)
    return { broker, a, b }
  })

/** What the peer's host was handed; it must be there already (the world is idle). */
const handed = (peer: Peer) =>
  Effect.flatMap(Queue.poll(peer.inbox), Option.match({
    onNone: () => Effect.die(`nothing was handed to ${peer.id}`),
    onSome: Effect.succeed
  }))

/** The result of a fiber that must have completed by now (the world is idle). */
const completed = <A, E>(fiber: Fiber.Fiber<A, E>): Effect.Effect<A, E> =>
  fiber.pollUnsafe() === undefined ? Effect.die("still running") : Fiber.join(fiber)

describe("session over the broker core", () => {
  it.effect("A asks B; B replies with no `to` in its triggered turn; A's ask returns the reply", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* step(a.session.intercom({ action: "ask", to: "B", message: "Retry POST too?" }))
      const inbound = yield* handed(b)
      assert.strictEqual(inbound.intent, "trigger")
      assert.strictEqual(
        inbound.text,
        `**From A** (/tmp/project)\n\nTo reply, use the intercom tool: intercom({ action: "reply", message: "..." })\n\nRetry POST too?`
      )
      const pending = yield* settle(b.session.intercom({ action: "pending" }))
      assert.match(pending.text, /^\*\*Pending asks:\*\*\n- A · [0-9a-f-]{36} · asked \ds ago · expires in 9m 5\ds · Retry POST too\?/)
      yield* settle(b.session.beginTurn())
      const replied = yield* settle(b.session.intercom({ action: "reply", message: "Only GET/PUT/DELETE — never POST." }))
      assert.deepStrictEqual([replied.text, replied.isError], ["Reply sent to A", false])
      const result = yield* completed(asking)
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\nOnly GET/PUT/DELETE — never POST.", false])
      // The reply resolved the waiter; A's host never saw it as an inbound message.
      assert.strictEqual(yield* Queue.size(a.inbox), 0)
      assert.strictEqual((yield* settle(b.session.intercom({ action: "pending" }))).text, "No unresolved inbound asks.")
    }))

  it.effect("list, status and send render as in the docs", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      yield* settle(b.session.setStatus("thinking")) // the presence has reached the broker when the step ends
      const list = yield* settle(a.session.intercom({ action: "list" }))
      // Both sessions published their health (health-v1): B is thinking, so it does not accept asks (C-HLT-1, C-HLT-3).
      const rows = "**Current session:**\n" +
        "• A (aaaaaaaa) — /tmp/project (test-model) [self, idle, state:idle, accepts_asks:true, pending_asks:0, " +
        "last_intercom_activity:none, last_seen:0s ago]\n" +
        "  ↳ self target unavailable; choose a peer from Other sessions; use pending/reply for inbound asks\n\n" +
        "**Other sessions:**\n" +
        "• B (bbbbbbbb) — /tmp/project (test-model) [same cwd, thinking, state:busy, accepts_asks:false, pending_asks:0, " +
        "last_intercom_activity:none, last_seen:0s ago]\n" +
        `  ${deliveryGuidance("busy")}`
      assert.strictEqual(list.text, rows)
      const status = yield* settle(a.session.intercom({ action: "status" }))
      assert.strictEqual(
        status.text,
        `**Intercom Status:**\nConnected: Yes\nSession ID: ${a.id}\nGroup: default\nActive sessions: 2\n\n${rows}`
      )
      const sent = yield* settle(a.session.intercom({ action: "send", to: "bbbbbbbb", message: "Check UserService" }))
      assert.deepStrictEqual([sent.text, sent.isError], ["Message sent to bbbbbbbb", false])
      const inbound = yield* handed(b)
      assert.deepStrictEqual([inbound.intent, inbound.text], ["steer", "**From A** (/tmp/project)\n\nCheck UserService"])
      const self = yield* settle(a.session.intercom({ action: "send", to: "a", message: "me?" }))
      assert.deepStrictEqual([self.text, self.isError], ["Cannot message the current session", true])
      const ghost = yield* settle(a.session.intercom({ action: "send", to: "nobody", message: "hello?" }))
      assert.deepStrictEqual([ghost.text, ghost.isError], [`Message to "nobody" was not delivered: Session not found`, true])
    }))

  it.effect("an unnamed session is listed and reachable under its fallback alias", () =>
    Effect.gen(function*() {
      const { a, broker } = yield* pair()
      const anonymous = yield* peer(inMemory(broker), "session-c0ffee00-1111", undefined)
      yield* settle(anonymous.session.status)
      const list = yield* settle(a.session.intercom({ action: "list" }))
      assert.include(list.text, "• subagent-chat-c0ffee00 (session-) — /tmp/project (test-model) [same cwd, idle, state:idle")
      const sent = yield* settle(a.session.intercom({ action: "send", to: "subagent-chat-c0ffee00", message: "hi" }))
      assert.strictEqual(sent.text, "Message sent to subagent-chat-c0ffee00")
      assert.strictEqual((yield* handed(anonymous)).message.content.text, "hi")
    }))

  it.effect("the asked peer disconnecting ends the ask with `Reply peer disconnected before answering`", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* step(a.session.intercom({ action: "ask", to: "B", message: "still there?" }))
      yield* handed(b)
      yield* b.close
      const result = yield* completed(asking)
      assert.deepStrictEqual([result.text, result.isError], [`Reply peer disconnected before answering: ${b.id}`, true])
      assert.isFalse(yield* a.session.waiting)
    }))

  /** A asks B; B answers in one write with `after`: what A's ask returned, and A's inbox size. */
  const answeredThen = (after: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const a = yield* peer(inMemory(broker), A_ID, "A")
      yield* settle(a.session.status)
      const b = yield* broker.session({ sessionId: B_ID, name: "B" })
      const asking = yield* step(a.session.intercom({ action: "ask", to: "B", message: "Which port?" }))
      const question = yield* b.client.next("message")
      yield* b.client.sendRaw(encodeFrames([
        JSON.stringify({
          type: "send",
          to: A_ID,
          message: { id: "answer-1", timestamp: 1, content: { text: "8080" }, replyTo: question.message.id }
        }),
        ...after
      ]))
      yield* settle(Effect.void)
      const result = yield* completed(asking)
      return { result, inboxSize: yield* Queue.size(a.inbox) }
    })

  it.effect("the asked peer answers and unregisters in one write: the ask returns the answer (C-ASK-9)", () =>
    Effect.gen(function*() {
      // A child that answers its parent and exits: both in one read, the answer then the session_left.
      const { inboxSize, result } = yield* answeredThen([JSON.stringify({ type: "unregister" })])
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\n8080", false])
      assert.strictEqual(inboxSize, 0, "the answer was not handed over as a message")
    }))

  it.effect("the asked peer answers, unregisters and registers again in one write: the ask returns the answer (C-ASK-9, C-BRK-33)", () =>
    Effect.gen(function*() {
      // The answer is queued for A, then B leaves and is back before A's writer collects: A hears B leave
      // only after the answer.
      const { inboxSize, result } = yield* answeredThen([
        JSON.stringify({ type: "unregister" }),
        JSON.stringify(registerFrame({ sessionId: B_ID, name: "B" }))
      ])
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\n8080", false])
      assert.strictEqual(inboxSize, 0, "the answer was not handed over as a message")
    }))

  it.effect("a peer asks and unregisters in one write: its ask is not left pending (C-RPL-10)", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const a = yield* peer(inMemory(broker), A_ID, "A")
      yield* settle(a.session.status)
      const b = yield* broker.session({ sessionId: B_ID, name: "B" })
      // The ask and B's session_left come in one write (the departure after the ask queued before it).
      yield* b.client.sendRaw(encodeFrames([
        JSON.stringify({
          type: "send",
          to: A_ID,
          message: { id: "ask-1", timestamp: 1, content: { text: "Which port?" }, expectsReply: true }
        }),
        JSON.stringify({ type: "unregister" })
      ]))
      yield* settle(Effect.void)
      const inbound = yield* handed(a)
      assert.strictEqual(inbound.message.id, "ask-1", "the host still gets the message")
      assert.strictEqual(yield* a.session.pendingCount, 0)
    }))

  it.effect("a peer that left and joined again is asking anew: its ask is pending", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const a = yield* peer(inMemory(broker), A_ID, "A")
      yield* settle(a.session.status)
      const first = yield* broker.session({ sessionId: B_ID, name: "B" })
      yield* first.client.sendRaw(encodeFrames([JSON.stringify({ type: "unregister" })]))
      yield* settle(Effect.void)
      const again = yield* broker.session({ sessionId: B_ID, name: "B" })
      yield* again.client.sendRaw(encodeFrames([JSON.stringify({
        type: "send",
        to: A_ID,
        message: { id: "ask-2", timestamp: 2, content: { text: "Which port now?" }, expectsReply: true }
      })]))
      yield* settle(Effect.void)
      assert.strictEqual((yield* handed(a)).message.id, "ask-2")
      assert.strictEqual(yield* a.session.pendingCount, 1)
    }))

  it.effect("an interrupted ask sends cancel_ask: the broker then refuses the late reply", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* step(a.session.ask({ to: "B", message: "q" }))
      const question = yield* handed(b)
      // The cancel_ask goes out from a background fiber; the step runs it through the broker.
      yield* settle(Fiber.interrupt(asking))
      assert.isFalse(yield* a.session.waiting)
      const late = yield* settle(b.session.intercom({ action: "reply", message: "too late" }))
      assert.deepStrictEqual([late.text, late.isError], [
        `Reply to "A" was not delivered: the broker no longer holds the ask ${question.message.id} (it expired, or A withdrew it), ` +
        "so A no longer waits for an answer. If A still needs it, send it to A as a plain message (a send without replyTo).",
        true
      ])
    }))

  it.effect("a race: three asks at once, one question on the wire, the winner gets its reply", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asks = yield* step(Effect.all(
        [1, 2, 3].map((n) => a.session.intercom({ action: "ask", to: "B", message: `q${n}` })),
        { concurrency: "unbounded" }
      ))
      const inbound = yield* handed(b)
      assert.strictEqual(yield* Queue.size(b.inbox), 0, "a second question reached B")
      yield* settle(b.session.beginTurn({ from: inbound.from.id, messageId: inbound.message.id }))
      yield* settle(b.session.intercom({ action: "reply", message: `answer to ${inbound.message.content.text}` }))
      const results = yield* completed(asks)
      const winner = Number(inbound.message.content.text.slice(1)) - 1
      results.forEach((result, index) =>
        assert.strictEqual(
          result.text,
          index === winner ? `**Reply from B:**\nanswer to ${inbound.message.content.text}` : "Already waiting for a reply"
        )
      )
    }))

  it.effect("a mutual ask is refused by the broker and reported as not delivered", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const asking = yield* step(a.session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* handed(b)
      const back = yield* settle(b.session.intercom({ action: "ask", to: "A", message: "and you?" }))
      assert.deepStrictEqual([back.text, back.isError], [`Message to "A" was not delivered: ${Reason.mutualAsk}`, true])
      assert.isFalse(yield* b.session.waiting)
      yield* settle(Fiber.interrupt(asking))
    }))
})

describe("session over a real Unix socket", () => {
  it.live("A asks B, B replies, A's ask returns the reply", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const transport = { agentDir: broker.root, intercomDir: broker.intercomDir, socketPath: broker.socketPath }
      const a = yield* peer(transport, A_ID, "A", { simulated: false })
      const b = yield* peer(transport, B_ID, "B", { simulated: false })
      yield* b.session.status
      const asking = yield* Effect.forkChild(a.session.intercom({ action: "ask", to: "B", message: "Retry POST too?" }))
      const inbound = yield* Queue.take(b.inbox)
      assert.strictEqual(inbound.message.content.text, "Retry POST too?")
      yield* b.session.beginTurn({ from: inbound.from.id, messageId: inbound.message.id })
      const replied = yield* b.session.intercom({ action: "reply", message: "Only GET." })
      assert.deepStrictEqual([replied.text, replied.isError], ["Reply sent to A", false])
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\nOnly GET.", false])
    }))
})
