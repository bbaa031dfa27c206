/**
 * Input that could hurt other sessions: over-long identity fields, invalid
 * UTF-8, forged log lines, echoed oversized ids, a frame that never ends.
 * Each is refused or cut off, and the others never notice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, References } from "effect"
import { TestClock } from "effect/testing"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { DELIVERY_V1, GROUPS_V1, QUESTIONS_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { MAX_CWD_LENGTH, MAX_ID_LENGTH, MAX_NAME_LENGTH } from "../../src/protocol/limits.ts"
import { closedWithoutReply } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { list, message, register, registerFrame, withBroker } from "../support/broker.ts"
import { Output } from "../../src/broker/Output.ts"
import { MAX_SHOWN_LENGTH } from "../../src/protocol/shownValue.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { memoryNetwork, withMemoryBroker } from "../support/memory.ts"
import { vi } from "vitest"

describe("identity fields over their limits", () => {
  it.effect("a register with a cwd over the limit is refused with a clear error, and nobody hears of it", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const bad = yield* broker.connect("bad")
      yield* bad.send(registerFrame({ sessionId: "bad", cwd: "/x".repeat(MAX_CWD_LENGTH) }))
      const error = yield* bad.next("error")
      assert.include(error.error, `"cwd" is ${2 * MAX_CWD_LENGTH} characters long; the limit is ${MAX_CWD_LENGTH}`)
      yield* bad.waitClosed()
      yield* settled([watcher.client], [watcher.client])
      yield* watcher.client.expectNothing("session_joined")
    }))

  it.effect("a presence update over the limit is refused; the peers keep the old name", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const bad = yield* broker.session({ sessionId: "bad", name: "fine" })
      yield* watcher.client.next("session_joined", (frame) => frame.session.id === "bad")
      yield* bad.client.send({ type: "presence", name: "n".repeat(MAX_NAME_LENGTH + 1) })
      assert.include((yield* bad.client.next("error")).error, `"name" is ${MAX_NAME_LENGTH + 1} characters long`)
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "bad")
      yield* watcher.client.expectNothing("presence_update")
    }))
})

// The broker joins ids with control characters to build its keys (scope key, NUL, id): an id holding one
// could spell another scope's session (scope "a" with id "b\0c" is scope "a\0b" with id "c"), whose replay
// records, receipts and mailbox it would then share.
describe("ids that hold a control character", () => {
  const refused = (frame: Record<string, unknown>, field: string, code: string) =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const bad = yield* broker.connect("bad")
      yield* bad.send(frame)
      const error = yield* bad.next("error")
      assert.include(error.error, `"${field}" contains the control character U+${code}`)
      yield* bad.waitClosed()
      yield* settled([watcher.client], [watcher.client])
      yield* watcher.client.expectNothing("session_joined")
    })

  it.effect("a sessionId holding NUL is refused with a clear error, and nobody hears of it", () =>
    refused(registerFrame({ sessionId: "b\u0000c", scopeId: "a" }), "sessionId", "0000"))

  it.effect("a scopeId holding NUL is refused", () =>
    refused(registerFrame({ sessionId: "c", scopeId: "a\u0000b" }), "scopeId", "0000"))

  it.effect("a scopeId holding the group separator U+0003 is refused", () =>
    refused(registerFrame({ sessionId: "c", scopeId: "a\u0003group:b" }), "scopeId", "0003"))

  it.effect("a group holding a control character is refused", () =>
    refused(registerFrame({ sessionId: "c", frame: { features: [GROUPS_V1], group: "x\ny" } }), "group", "000A"))

  it.effect("a name holding NUL is refused (the mailbox identity joins scope, name and cwd with it)", () =>
    refused(registerFrame({ sessionId: "c", name: "b\u0000x" }), "name", "0000"))

  it.effect("a presence update whose name holds NUL is refused; the peers keep the old name", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const bad = yield* broker.session({ sessionId: "bad", name: "fine" })
      yield* watcher.client.next("session_joined", (frame) => frame.session.id === "bad")
      yield* bad.client.send({ type: "presence", name: "x\u0000y" })
      assert.include((yield* bad.client.next("error")).error, `"name" contains the control character U+0000`)
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "bad")
      yield* watcher.client.expectNothing("presence_update")
    }))

  it.effect("a scope read with a trailing newline is trimmed and taken, as before", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const peer = yield* broker.session({ sessionId: "peer", scopeId: "team" })
      const newline = yield* broker.session({ sessionId: "newline", scopeId: "team\n" })
      const listed = yield* list(newline.client)
      assert.deepStrictEqual(listed.map((session) => session.id).sort(), ["newline", "peer"])
      assert.isDefined(peer)
    }))
})

describe("ids the broker would echo", () => {
  for (const frame of [
    { type: "health", requestId: "h".repeat(MAX_ID_LENGTH + 1) },
    { type: "list", requestId: "l".repeat(MAX_ID_LENGTH + 1) },
    { type: "cancel_message", messageId: "c".repeat(MAX_ID_LENGTH + 1) }
  ]) {
    it.effect(`an over-long id in ${frame.type} is refused: the connection closes without an answer`, () =>
      Effect.gen(function*() {
        const broker = yield* withMemoryBroker()
        const session = yield* broker.session({ sessionId: "s" })
        yield* session.client.send(frame)
        yield* closedWithoutReply(session.client)
      }))
  }
})

describe("bytes that are not frames", () => {
  it.live("a payload that is not valid UTF-8 closes that connection; the others carry on", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const other = yield* broker.session({ sessionId: "other" })
      const bad = yield* broker.connect("bad")
      const payload = Buffer.concat([Buffer.from('{"type":"health","requestId":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])
      const header = Buffer.alloc(4)
      header.writeUInt32BE(payload.length)
      yield* bad.sendRaw(Buffer.concat([header, payload]))
      yield* bad.waitClosed()
      assert.strictEqual(bad.count("health_ok"), 0)
      yield* other.client.roundTrip
    }))

  // Live: the hold must last through two real stall checks while the broker has
  // half a frame of the sender's decoded (under TestClock the checks would run
  // before the socket's bytes were even read). The sleep is the hold, not a barrier.
  it.live("a sender held back by backpressure with half a frame read is not cut off, however long the hold", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null, outboxCapacity: 8 })
      const receiver = yield* broker.session({ sessionId: "receiver" })
      const sender = yield* broker.session({ sessionId: "sender" })
      yield* receiver.client.pause
      // 3.2 MiB of sends, far more than the socket buffers and the outbox hold: the broker
      // stops reading the sender with part of a frame decoded; the last frame is cut short.
      const frames = Array.from({ length: 400 }, (_, i) =>
        JSON.stringify({ type: "send", to: "receiver", message: message(`held ${i}:`.padEnd(8 * 1024, ".")) }))
      const last = encodeFrames([JSON.stringify({ type: "send", to: "receiver", message: message("last") })])
      yield* sender.client.sendRaw(Buffer.concat([encodeFrames(frames), last.subarray(0, 10)]))
      yield* Effect.sleep("6 seconds") // the hold under test (two real stall checks), not a barrier
      yield* receiver.client.resume
      yield* sender.client.sendRaw(last.subarray(10))
      for (let i = 0; i < 401; i++) yield* receiver.client.next("message", undefined, "10 seconds")
      yield* sender.client.roundTrip
      assert.isFalse(sender.client.isClosed())
      assert.strictEqual(sender.client.count("delivered"), 401)
    }))

  it.effect("a frame begun and never finished is cut off within two stall checks (5 s); a registered idle session is not", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const idle = yield* broker.session({ sessionId: "idle" })
      const slow = yield* broker.connect("slow")
      yield* register(slow, { sessionId: "slow" })
      // The header of a 100-byte frame and one byte of it; then nothing more.
      const header = Buffer.alloc(4)
      header.writeUInt32BE(100)
      yield* slow.sendRaw(Buffer.concat([header, Buffer.from("{")]))
      yield* idle.client.roundTrip
      yield* TestClock.adjust("5 seconds")
      yield* slow.waitClosed()
      yield* TestClock.adjust("1 hour")
      yield* idle.client.roundTrip
      assert.isFalse(idle.client.isClosed())
    }))
})

describe("log lines", () => {
  it.effect("a frame type with a newline cannot forge a log line: it is escaped", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make<unknown, void>(({ message }) => {
        lines.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      yield* Effect.gen(function*() {
        const broker = yield* withMemoryBroker()
        const session = yield* broker.connect("forger")
        yield* session.send({ type: "x\nINFO session joined: admin" })
        yield* session.waitClosed()
      }).pipe(Effect.provide(Logger.layer([capture])), Effect.provideService(References.MinimumLogLevel, "Info"))
      const forged = lines.find((line) => line.includes("INFO session joined: admin"))
      assert.isDefined(forged)
      assert.notInclude(forged, "\n")
      assert.include(forged, "\\u000a")
      assert.isBelow(Math.max(...lines.map((line) => line.length)), MAX_FRAME_BYTES)
    }))
})

describe("what the broker remembers is bounded", () => {
  it.effect("a scope is forgotten once its sessions have left and been forgotten; a registration refused at the cap leaves none", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ maxSessions: 2 })
      const stay = yield* broker.session({ sessionId: "stay" })
      const visitor = yield* broker.session({ sessionId: "visitor", scopeId: "elsewhere" })
      assert.strictEqual((yield* broker.broker.stats).scopes, 2)
      // At the cap, a registration in a third scope is refused and leaves no scope behind.
      const refused = yield* broker.connect("refused")
      yield* refused.send(registerFrame({ sessionId: "late", scopeId: "third" }))
      yield* refused.next("error")
      assert.strictEqual((yield* broker.broker.stats).scopes, 2)
      // The visitor leaves: its scope is kept while it is remembered (a day), then forgotten.
      yield* visitor.client.destroy
      yield* stay.client.roundTrip
      assert.deepStrictEqual([(yield* broker.broker.stats).scopes, (yield* broker.broker.stats).departed], [2, 1])
      yield* TestClock.adjust("25 hours")
      yield* stay.client.send({ type: "send", to: "nobody", message: { id: "m", timestamp: 0, content: { text: "x" } } })
      yield* stay.client.next("delivery_failed")
      assert.deepStrictEqual([(yield* broker.broker.stats).scopes, (yield* broker.broker.stats).departed], [1, 0])
    }))
})

// Values are checked and then named in the refusal. Naming one must not walk it: `String()` of a
// 1 MiB `[[[…]]]` recursed past the call stack, and the throw, inside the socket's `data` listener,
// ended the broker process. Nor may it echo a frame-sized string: the answer would be over 1 MiB,
// and the broker would drop it, leaving the sender no answer.
describe("values no check foresaw", () => {
  const DEPTH = 400_000
  const nested = `${"[".repeat(DEPTH)}1${"]".repeat(DEPTH)}`
  /** The text of `frame` with `field` set to `raw` (JSON written as is), or to a string filling the frame to exactly 1 MiB. */
  const withField = (frame: Record<string, unknown>, field: string, raw: string | "fill") => {
    const shell = JSON.stringify({ ...frame, [field]: "" })
    const text = raw === "fill"
      ? JSON.stringify({ ...frame, [field]: "x".repeat(MAX_FRAME_BYTES - Buffer.byteLength(shell)) })
      : `${shell.slice(0, -3)}${raw}}`
    assert.isAtMost(Buffer.byteLength(text), MAX_FRAME_BYTES)
    return text
  }
  const questionsBroker = Effect.gen(function*() {
    const net = yield* memoryNetwork()
    yield* Effect.provideService(net.startBroker(), QuestionStore, makeMemory(makeMemoryState()))
    const asker = yield* net.session({
      sessionId: "sup-0001",
      name: "supervisor",
      frame: { features: [GROUPS_V1, SUPERVISOR_V1, QUESTIONS_V1], ownerToken: "owner-token-of-the-supervisor" }
    })
    const other = yield* net.session({ sessionId: "other" })
    return { asker: asker.client, other: other.client }
  })
  const sendBroker = Effect.gen(function*() {
    const broker = yield* withMemoryBroker()
    yield* broker.session({ sessionId: "target" })
    const sender = yield* broker.session({ sessionId: "sender", frame: { features: [DELIVERY_V1] } })
    const other = yield* broker.session({ sessionId: "other" })
    return { sender: sender.client, other: other.client }
  })
  const send = { type: "send", to: "target", message: { id: "m-1", timestamp: 1, content: { text: "hi" } } }

  it.effect("a question_list whose offset is a deeply nested array is refused, naming it an array; others are served", () =>
    Effect.gen(function*() {
      const { asker, other } = yield* questionsBroker
      yield* asker.sendText(withField({ type: "question_list", requestId: "r1" }, "offset", nested))
      const failed = yield* asker.next("question_failed")
      assert.include(failed.reason, "offset must be a non-negative integer (got an array)")
      yield* other.send({ type: "health", requestId: "h1" })
      yield* other.next("health_ok")
    }))

  it.effect("a question_list whose limit is a string filling the frame is answered, quoting only its start", () =>
    Effect.gen(function*() {
      const { asker } = yield* questionsBroker
      yield* asker.sendText(withField({ type: "question_list", requestId: "r2" }, "limit", "fill"))
      const failed = yield* asker.next("question_failed")
      assert.include(failed.reason, `(got "${"x".repeat(MAX_SHOWN_LENGTH)}…")`)
    }))

  it.effect("a send whose delivery is a deeply nested array is refused, naming it an array; others are served", () =>
    Effect.gen(function*() {
      const { other, sender } = yield* sendBroker
      yield* sender.sendText(withField(send, "delivery", nested))
      const failed = yield* sender.next("delivery_failed")
      assert.include(failed.reason, "Invalid delivery an array")
      yield* other.send({ type: "health", requestId: "h1" })
      yield* other.next("health_ok")
    }))

  it.effect("a send whose queueMode is a string filling the frame is answered, quoting only its start", () =>
    Effect.gen(function*() {
      const { sender } = yield* sendBroker
      yield* sender.sendText(withField({ ...send, delivery: "queue" }, "queueMode", "fill"))
      const failed = yield* sender.next("delivery_failed")
      assert.include(failed.reason, `Invalid queueMode "${"x".repeat(MAX_SHOWN_LENGTH)}…"`)
    }))

  it.effect("a frame whose handling throws closes only that connection, logs the error, and the broker serves on", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make<unknown, void>(({ message }) => {
        lines.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      // A stand-in for a bug: the health answer to request "boom" throws where it is queued.
      const enqueue = Output.prototype.enqueue
      const spy = vi.spyOn(Output.prototype, "enqueue").mockImplementation(function(this: Output, peer, item) {
        if (typeof item === "string" && item.includes(`"requestId":"boom"`)) throw new Error("a stand-in bug")
        enqueue.call(this, peer, item)
      })
      yield* Effect.gen(function*() {
        const broker = yield* withMemoryBroker()
        const victim = yield* broker.session({ sessionId: "victim" })
        const other = yield* broker.session({ sessionId: "other" })
        yield* victim.client.send({ type: "health", requestId: "boom" })
        yield* victim.client.waitClosed()
        yield* other.client.send({ type: "health", requestId: "h1" })
        yield* other.client.next("health_ok")
      }).pipe(
        Effect.provide(Logger.layer([capture])),
        Effect.provideService(References.MinimumLogLevel, "Info"),
        Effect.ensuring(Effect.sync(() => spy.mockRestore()))
      )
      const logged = lines.find((line) => line.includes("Broker bug"))
      assert.isDefined(logged)
      assert.include(logged, `handling a "health" frame`)
      assert.include(logged, "a stand-in bug")
    }))
})
