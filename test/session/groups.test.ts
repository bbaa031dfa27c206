/**
 * Groups in the session runtime (C-GRP-1/2/5/6, C-TOOL-9, C-TOOL-11): the
 * tool's read-only `group` parameter over a scripted client, then the same
 * through the real broker core (in memory, under TestClock) with sessions in
 * two groups.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Queue, Scope } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { homeGroup, normalizeGroup } from "../../src/config/group.ts"
import { Host, headless, type Inbound } from "../../src/session/Host.ts"
import { deliveryGuidance, SELF_GUIDANCE } from "../../src/session/health.ts"
import { IntercomSession, type IntercomSessionService, sessionRegistration } from "../../src/session/IntercomSession.ts"
import { closeOnSimulatedTime, type MemoryBroker, settle, withMemoryBroker } from "../support/memory.ts"
import { B, C, info, SELF, withPeers } from "./support.ts"

describe("C-GRP-1/2 group names and the home group", () => {
  it("blank means default, names are trimmed, the first non-blank level wins", () => {
    assert.deepStrictEqual(
      [normalizeGroup(undefined), normalizeGroup(""), normalizeGroup("  "), normalizeGroup(" red ")],
      ["default", "default", "default", "red"]
    )
    assert.strictEqual(homeGroup(" launcher ", "env"), "launcher")
    assert.strictEqual(homeGroup("  ", "env"), "env")
    assert.strictEqual(homeGroup(undefined, " "), "default")
  })
})

describe("C-GRP-5/6 the tool's group parameter (scripted client)", () => {
  it.effect("send, ask and reply with another group are refused before anything is sent", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.group = "red"
      for (const action of ["send", "ask", "reply"]) {
        const result = yield* session.intercom({ action, to: "B", message: "hi", group: "blue" })
        assert.isTrue(result.isError)
        assert.strictEqual(result.details["error"], "GroupReadOnly")
        assert.strictEqual(
          result.text,
          `The 'group' parameter is read-only: ${action} is locked to this session's own group "red", so it cannot reach ` +
            `group "blue". Nothing was sent. Leave out 'group' (or pass "red"); use list with group to look at another group.`
        )
      }
      assert.deepStrictEqual(client.sends, [])
      // Refused before connecting: the check needs nothing from the broker.
      assert.strictEqual(client.connects, 0)
    }))

  it.effect("the topic actions with another group are refused before anything is published or subscribed", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.group = "red"
      const calls = [
        { action: "publish", topic: "build", event: "status", message: "green" },
        { action: "subscribe", topic: "build" },
        { action: "unsubscribe", topic: "build" },
        { action: "topics" }
      ]
      for (const call of calls) {
        const result = yield* session.intercom({ ...call, group: "blue" })
        assert.deepStrictEqual([result.isError, result.details["error"]], [true, "GroupReadOnly"], call.action)
        assert.include(result.text, `${call.action} is locked to this session's own group "red"`)
      }
      assert.deepStrictEqual(client.topicCalls, [])
      // With the own group they act as without one.
      const own = yield* session.intercom({ action: "subscribe", topic: "build", group: "red" })
      assert.isFalse(own.isError, own.text)
      assert.deepStrictEqual(client.topicCalls.length, 1)
    }))

  it.effect("send with the own group (trimmed) or a blank group is sent", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.group = "red"
      const own = yield* session.intercom({ action: "send", to: "B", message: "one", group: " red " })
      const blank = yield* session.intercom({ action: "send", to: "B", message: "two", group: "  " })
      assert.deepStrictEqual([own.text, own.isError, blank.text, blank.isError], [
        "Message sent to B",
        false,
        "Message sent to B",
        false
      ])
      assert.strictEqual(client.sends.length, 2)
    }))

  it.effect("a group that is too long or holds a control character is refused; nothing reaches the broker", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const long = yield* session.intercom({ action: "list", group: "g".repeat(257) })
      assert.deepStrictEqual([long.text, long.isError], ["Invalid group: it is 257 characters long; the limit is 256", true])
      const control = yield* session.intercom({ action: "send", to: "B", message: "hi", group: "re\u0007d" })
      assert.deepStrictEqual([control.text, control.isError], ["Invalid group: it contains a control character", true])
      assert.deepStrictEqual([client.peeks, client.sends.length], [[], 0])
    }))

  it.effect("list with another group peeks read-only; with none or the own group it lists the own group", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.group = "red"
      client.peekable = new Map([["blue", [info("d0d0d0d0-1111", { name: "D", status: "idle" }), info("e0e0e0e0-1111", { cwd: "/else" })]]])
      const peek = yield* session.intercom({ action: "list", group: " blue " })
      assert.isFalse(peek.isError)
      assert.strictEqual(
        peek.text,
        `**Group "blue" (read-only view):**\nYou cannot send to or ask these sessions: send and ask stay in your own group "red".\n\n` +
          "• D (d0d0d0d0) — /work (test-model) [same cwd, idle, group: blue]\n" +
          "• Unnamed session (e0e0e0e0) — /else (test-model) [group: blue]"
      )
      assert.strictEqual(peek.details["readOnly"], true)
      assert.strictEqual(peek.details["group"], "blue")
      assert.deepStrictEqual(client.peeks, ["blue"])

      const empty = yield* session.intercom({ action: "list", group: "green" })
      assert.match(empty.text, /\n\nNo sessions connected in this group\.$/)

      // C-TOOL-9: rows of a group other than default carry `group: <g>`.
      for (const group of [undefined, "red"]) {
        const own = yield* session.intercom({ action: "list", group })
        assert.strictEqual(
          own.text,
          "**Current session:**\n• self (self-000) — /work (test-model) [self, group: red]\n\n**Other sessions:**\n" +
            "• B (b0b0b0b0) — /work (test-model) [same cwd, group: red]\n• C (c0c0c0c0) — /work (test-model) [same cwd, group: red]"
        )
        assert.strictEqual(own.details["group"], "red")
      }
      assert.deepStrictEqual(client.peeks, ["blue", "green"])
    }))

  it.effect("C-TOOL-11 status names the group and counts it; with another group it adds a read-only count", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.group = "red"
      client.peekable = new Map([["blue", [B]]])
      const plain = yield* session.intercom({ action: "status" })
      assert.strictEqual(plain.text, "**Intercom Status:**\nConnected: Yes\nSession ID: self-0000-0000\nGroup: red\nActive sessions: 3")
      const peeked = yield* session.intercom({ action: "status", group: "blue" })
      assert.strictEqual(
        peeked.text,
        "**Intercom Status:**\nConnected: Yes\nSession ID: self-0000-0000\nGroup: red\nActive sessions: 3\n" +
          `Group "blue" (read-only view, no send rights): 1 active session`
      )
      assert.deepStrictEqual(peeked.details["peek"], { group: "blue", activeSessions: 1, readOnly: true })
      const own = yield* session.intercom({ action: "status", group: "red" })
      assert.strictEqual(own.text, plain.text)
    }))

  it.effect("in the default group, list rows carry no group tag", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.sessions = [SELF, C]
      const own = yield* session.intercom({ action: "list" })
      assert.notInclude(own.text, "group:")
    }))
})

// ---------------------------------------------------------------------------
// Through the broker core
// ---------------------------------------------------------------------------

interface Peer {
  readonly id: string
  readonly session: IntercomSessionService
  readonly inbox: Queue.Queue<Inbound>
}

const peer = (broker: MemoryBroker, id: string, name: string, group: string | undefined) =>
  Effect.gen(function*() {
    const inbox = yield* Queue.unbounded<Inbound>()
    const identity = { name, cwd: "/tmp/project", model: "test-model" }
    const client = IntercomClient.layer({
      agentDir: "/mem",
      intercomDir: "/mem/intercom",
      socketPath: broker.address,
      dial: broker.dial,
      sessionId: id,
      group,
      registration: sessionRegistration({ sessionId: id, identity, pid: 4242, startedAt: 0 }),
      launch: false
    })
    const host = Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound)))
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer().pipe(Layer.provide(Layer.merge(client, host))),
      scope
    )
    const session = Context.get(context, IntercomSession)
    yield* settle(session.connect)
    return { id, session, inbox } satisfies Peer
  })

describe("groups through the broker core", () => {
  it.effect("a red session peeks at blue read-only, is refused sending there, and sends within red", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const red = yield* peer(broker, "aaaaaaaa-0000-4000-8000-000000000001", "A", " red ")
      const redMate = yield* peer(broker, "cccccccc-0000-4000-8000-000000000003", "C", "red")
      const blue = yield* peer(broker, "bbbbbbbb-0000-4000-8000-000000000002", "B", "blue")

      const own = yield* settle(red.session.intercom({ action: "list" }))
      const health = "state:idle, accepts_asks:true, pending_asks:0, last_intercom_activity:none, last_seen:0s ago"
      const rows = `**Current session:**\n• A (aaaaaaaa) — /tmp/project (test-model) [self, idle, group: red, ${health}]\n` +
        `  ${SELF_GUIDANCE}\n\n` +
        `**Other sessions:**\n• C (cccccccc) — /tmp/project (test-model) [same cwd, idle, group: red, ${health}]\n` +
        `  ${deliveryGuidance("idle")}`
      assert.strictEqual(own.text, rows)
      const peek = yield* settle(red.session.intercom({ action: "list", group: "blue" }))
      assert.strictEqual(
        peek.text,
        `**Group "blue" (read-only view):**\nYou cannot send to or ask these sessions: send and ask stay in your own group "red".\n\n` +
          "• B (bbbbbbbb) — /tmp/project (test-model) [same cwd, idle, group: blue]"
      )
      const status = yield* settle(red.session.intercom({ action: "status", group: "blue" }))
      assert.strictEqual(
        status.text,
        `**Intercom Status:**\nConnected: Yes\nSession ID: ${red.id}\nGroup: red\nActive sessions: 2\n` +
          `Group "blue" (read-only view, no send rights): 1 active session\n\n${rows}`
      )

      const refused = yield* settle(red.session.intercom({ action: "send", to: "B", message: "hi", group: "blue" }))
      assert.deepStrictEqual([refused.isError, refused.details["error"]], [true, "GroupReadOnly"])
      // Without the parameter, the broker keeps the groups apart (C-GRP-3/4).
      const byName = yield* settle(red.session.intercom({ action: "send", to: "B", message: "hi" }))
      assert.isTrue(byName.isError)
      const byId = yield* settle(red.session.intercom({ action: "send", to: blue.id, message: "hi" }))
      assert.deepStrictEqual(
        [byId.text, byId.isError],
        [`Message to "${blue.id}" was not delivered: Target session is in a different intercom group`, true]
      )
      assert.strictEqual(yield* Queue.size(blue.inbox), 0)

      const mate = yield* settle(red.session.intercom({ action: "send", to: "C", message: "in red", group: "red" }))
      assert.deepStrictEqual([mate.text, mate.isError], ["Message sent to C", false])
      // The world is idle after the step: the message is there or never comes.
      const handed = yield* Queue.poll(redMate.inbox)
      assert.strictEqual(Option.getOrUndefined(handed)?.message.content.text, "in red")
    }))
})
