/**
 * Regression tests for issue "Hostile and oversized input cannot hurt other
 * sessions", findings 1–8 (finding 9, memory, is hostile-memory.test.ts):
 * one describe per finding, against a real broker over real sockets.
 *
 * Each test asserts the promised behaviour (docs/security.md). Those of the
 * findings failed against the broker before their fixes; the others guard
 * promises that already held.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { MeteredFrame } from "../../src/fuzz/FrameMeter.ts"
import { type Claim, frameObject, frameOfType, type RawConnection } from "../../src/fuzz/RawConnection.ts"
import { startBroker } from "../../src/fuzz/BrokerUnderTest.ts"
import { PROMISES } from "../../src/fuzz/promises.ts"
import { LIST_PAGE_V1 } from "../../src/protocol/index.ts"
import { freshId, withBroker } from "../support/broker.ts"
import {
  answeredOrClosed,
  assertNoOversizedFrame,
  awaitLogLine,
  bigFrame,
  expectFrame,
  frameBytes,
  healthLatency,
  mark,
  raw,
  registerWith,
  registration,
  roundTrip,
  session,
  withLoggedBroker
} from "../support/hostile.ts"

const SCOPE = "hostile"

/** `value[key]` of an unknown JSON value, if it is an object. */
const fieldOf = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined

/** Whether a frame `claim` takes has arrived by now (exact after a round trip). */
const hasFrame = <A>(conn: RawConnection, claim: (frame: MeteredFrame) => Claim<A>): Effect.Effect<boolean> =>
  Effect.map(Effect.result(conn.next("frame", claim, "1 millis")), (result) => result._tag === "Success")

/** `{type:"send"}` of a small message with id `id`. */
const send = (to: string, id: string, extra: Record<string, unknown> = {}) =>
  frameBytes({ type: "send", to, message: { id, timestamp: 1, content: { text: `message ${id}` }, ...extra } })

/** The `delivered`/`delivery_failed` answer for `id` (a send's, or a cancel's bare one). */
const answerFor = (id: string) => frameOfType("delivered", (f) => f.messageId === id)

const failedFor = (id: string) => (frame: MeteredFrame) => {
  const object = frameObject(frame)
  return object !== undefined && (object.type === "delivered" || object.type === "delivery_failed") && object.messageId === id
    ? { take: true as const, value: object }
    : undefined
}

describe("finding 1: oversized fields are never amplified past 1 MiB", () => {
  it.live("a register whose cwd is 400 KB of invalid UTF-8 reaches nobody as a frame over 1 MiB", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const bystander = yield* session(broker.socketPath, "bystander", { scopeId: SCOPE })
      const offender = yield* raw(broker.socketPath, "offender")
      // 400,000 bytes of 0xFF: each decodes as U+FFFD, three bytes when written back out.
      yield* registerWith(offender, bigFrame(registration(freshId("big-cwd"), { scopeId: SCOPE, session: { cwd: mark(0) } }), "invalid-utf8", 400_000))
      yield* roundTrip(offender)
      // The bystander's round trip comes after whatever membership frame the registration caused.
      assert.isTrue(yield* roundTrip(bystander.conn), "the bystander was disconnected")
      assertNoOversizedFrame(bystander.conn)
      assertNoOversizedFrame(offender)
    }))

  it.live("presence updates of 900 KB name, status and model reach nobody as a frame over 1 MiB", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const bystander = yield* session(broker.socketPath, "bystander", { scopeId: SCOPE })
      const offender = yield* session(broker.socketPath, "offender", { scopeId: SCOPE })
      for (const field of ["name", "status", "model"]) {
        yield* offender.conn.write(bigFrame({ type: "presence", [field]: mark(0) }, "ascii", 900_000))
      }
      yield* roundTrip(offender.conn)
      assert.isTrue(yield* roundTrip(bystander.conn), "the bystander was disconnected")
      assertNoOversizedFrame(bystander.conn)
      assertNoOversizedFrame(offender.conn)
    }))

  it.live("a receipt with a 400 KB invalid-UTF-8 detail reaches the sender within 1 MiB", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const sender = yield* session(broker.socketPath, "sender", { scopeId: SCOPE })
      const receiver = yield* session(broker.socketPath, "receiver", { scopeId: SCOPE })
      yield* sender.conn.write(send(receiver.id, "m1"))
      yield* expectFrame(receiver.conn, "message m1", frameOfType("message"))
      const receipt = { type: "message_receipt", receipt: { messageId: "m1", status: "acknowledged", timestamp: 1, detail: mark(0) } }
      yield* receiver.conn.write(bigFrame(receipt, "invalid-utf8", 400_000))
      yield* roundTrip(receiver.conn)
      assert.isTrue(yield* roundTrip(sender.conn), "the sender was disconnected")
      assertNoOversizedFrame(sender.conn)
    }))
})

describe("finding 2: a send to an unknown target does not scan departed sessions", () => {
  // A broker process: an in-process broker busy in one long synchronous scan would stall this test's own timers.
  it.live("with departed sessions of million-character names, 80 sends to nobody leave health prompt", () =>
    Effect.gen(function*() {
      const broker = yield* Effect.orDie(startBroker("process"))
      for (let i = 0; i < 12; i++) {
        const departed = yield* raw(broker.socketPath, `departed ${i}`)
        // If the broker refuses such a name (a length limit), there is nothing to scan: fine too.
        const id = yield* registerWith(departed, bigFrame(registration(`departed-${i}`, { name: mark(0) }), "ascii", 1_000_000 - i))
        if (id !== undefined) {
          yield* departed.write(frameBytes({ type: "unregister" }))
          yield* roundTrip(departed)
        }
        yield* departed.destroy
      }
      const sender = yield* session(broker.socketPath, "sender")
      yield* sender.conn.write(Buffer.concat(Array.from({ length: 80 }, (_, i) => send(`nobody-${i}`, `u${i}`))))
      const latency = yield* healthLatency(broker.socketPath, "3 seconds")
      assert.isDefined(latency, "no health answer within 3 s while the sends were handled")
      assert.isAtMost(latency ?? Infinity, PROMISES.healthDeadlineMs, `health answered after ${latency} ms`)
    }), 60_000)
})

describe("finding 3: health stays prompt under connection churn", () => {
  it.live("a fresh health probe is answered within 1 s while 300 connections that send nothing are open", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      yield* Effect.forEach(Array.from({ length: 300 }, (_, i) => i), (i) => raw(broker.socketPath, `idle ${i}`), {
        concurrency: 50,
        discard: true
      })
      const latency = yield* healthLatency(broker.socketPath, "3 seconds")
      assert.isDefined(latency, "no health answer within 3 s")
      assert.isAtMost(latency ?? Infinity, PROMISES.healthDeadlineMs, `health answered after ${latency} ms`)
    }), 60_000)
})

describe("finding 4: message ids are per sender, not global", () => {
  /** A and B (the pair), X and Y (another pair in the same scope), all registered. */
  const four = Effect.gen(function*() {
    const broker = yield* withBroker()
    const open = (name: string) => session(broker.socketPath, name, { scopeId: SCOPE, sessionId: `${name}-${freshId("s")}` })
    return { broker, a: yield* open("a"), b: yield* open("b"), x: yield* open("x"), y: yield* open("y") }
  })

  it.live("another session's ask with the same id does not take A's ask: B's reply reaches A", () =>
    Effect.gen(function*() {
      const { a, b, x, y } = yield* four
      yield* a.conn.write(send(b.id, "q1", { expectsReply: true }))
      yield* expectFrame(a.conn, "A's ack", answerFor("q1"))
      yield* expectFrame(b.conn, "A's ask", frameOfType("message"))
      yield* x.conn.write(send(y.id, "q1", { expectsReply: true }))
      yield* expectFrame(x.conn, "X's ack", answerFor("q1"))
      yield* b.conn.write(send(a.id, "r1", { replyTo: "q1" }))
      const answer = yield* expectFrame(b.conn, "B's reply answer", failedFor("r1"))
      assert.strictEqual(answer.type, "delivered", `B's reply to A's ask was refused: ${JSON.stringify(answer)}`)
      const reply = yield* expectFrame(a.conn, "the reply", frameOfType("message"))
      assert.strictEqual(fieldOf(reply.message, "replyTo"), "q1")
    }))

  it.live("another session's send with the same id does not divert B's receipt for A's message", () =>
    Effect.gen(function*() {
      const { a, b, x, y } = yield* four
      yield* a.conn.write(send(b.id, "m1"))
      yield* expectFrame(a.conn, "A's ack", answerFor("m1"))
      yield* expectFrame(b.conn, "A's message", frameOfType("message"))
      yield* x.conn.write(send(y.id, "m1"))
      yield* expectFrame(x.conn, "X's ack", answerFor("m1"))
      yield* b.conn.write(frameBytes({ type: "message_receipt", receipt: { messageId: "m1", status: "acknowledged", timestamp: 1 } }))
      yield* roundTrip(b.conn)
      yield* roundTrip(x.conn)
      yield* roundTrip(a.conn)
      assert.isFalse(yield* hasFrame(x.conn, frameOfType("message_receipt")), "B's receipt for A's message went to X")
      assert.isTrue(yield* hasFrame(a.conn, frameOfType("message_receipt")), "B's receipt for A's message never reached A")
    }))

  it.live("A can still cancel its own message after another session used the same id", () =>
    Effect.gen(function*() {
      const { a, b, x, y } = yield* four
      yield* a.conn.write(send(b.id, "m2"))
      yield* expectFrame(a.conn, "A's ack", answerFor("m2"))
      yield* x.conn.write(send(y.id, "m2"))
      yield* expectFrame(x.conn, "X's ack", answerFor("m2"))
      yield* a.conn.write(frameBytes({ type: "cancel_message", messageId: "m2" }))
      const answer = yield* expectFrame(a.conn, "the cancel's answer", failedFor("m2"))
      assert.strictEqual(answer.type, "delivered", `A's cancel of its own message was refused: ${JSON.stringify(answer)}`)
      const control = yield* expectFrame(b.conn, "the cancel control", frameOfType("message_control"))
      assert.strictEqual(fieldOf(control.from, "id"), a.id)
    }))

  it.live("another session's queued mail with the same id does not replace A's queued mail", () =>
    Effect.gen(function*() {
      const { broker, a, x } = yield* four
      const d = yield* session(broker.socketPath, "d", { scopeId: SCOPE, sessionId: freshId("d") })
      const e = yield* session(broker.socketPath, "e", { scopeId: SCOPE, sessionId: freshId("e") })
      for (const away of [d, e]) {
        yield* away.conn.write(frameBytes({ type: "unregister" }))
        yield* roundTrip(away.conn)
      }
      yield* a.conn.write(send(d.id, "mail-1"))
      yield* expectFrame(a.conn, "A's ack", answerFor("mail-1"))
      yield* x.conn.write(send(e.id, "mail-1"))
      yield* expectFrame(x.conn, "X's ack", answerFor("mail-1"))
      const back = yield* session(broker.socketPath, "d again", { scopeId: SCOPE, sessionId: d.id })
      // The mail is flushed right after `registered`: the round trip's answer comes after it.
      yield* roundTrip(back.conn)
      assert.isTrue(
        yield* hasFrame(back.conn, frameOfType("message", (f) => fieldOf(f.from, "id") === a.id)),
        "A's queued mail for D was replaced by X's mail for E"
      )
    }))

  it.live("another session cannot cancel A's message or A's ask", () =>
    Effect.gen(function*() {
      const { a, b, x } = yield* four
      yield* a.conn.write(send(b.id, "m3"))
      yield* a.conn.write(send(b.id, "q3", { expectsReply: true }))
      yield* expectFrame(a.conn, "A's ack", answerFor("q3"))
      yield* expectFrame(b.conn, "A's ask", frameOfType("message", (f) => fieldOf(f.message, "id") === "q3"))
      yield* x.conn.write(frameBytes({ type: "cancel_message", messageId: "m3" }))
      const refused = yield* expectFrame(x.conn, "X's cancel answer", failedFor("m3"))
      assert.strictEqual(refused.type, "delivery_failed")
      yield* x.conn.write(frameBytes({ type: "cancel_ask", messageId: "q3" }))
      yield* roundTrip(x.conn)
      yield* b.conn.write(send(a.id, "r3", { replyTo: "q3" }))
      const answer = yield* expectFrame(b.conn, "B's reply answer", failedFor("r3"))
      assert.strictEqual(answer.type, "delivered", JSON.stringify(answer))
      yield* roundTrip(b.conn)
      assert.isFalse(yield* hasFrame(b.conn, frameOfType("message_control")), "X's cancel reached B")
    }))
})

describe("finding 5: big records do not hide other sessions from list", () => {
  it.live("a base list names the caller and the other normal sessions, whatever big records registered before them", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      for (const name of ["big-1", "big-2"]) {
        const big = yield* raw(broker.socketPath, name)
        // Valid ASCII records of 600 KB each (if the broker refuses them, they hide nothing).
        yield* registerWith(big, bigFrame(registration(freshId(name), { scopeId: SCOPE, session: { cwd: mark(0) } }), "ascii", 600_000))
      }
      const other = yield* session(broker.socketPath, "other", { scopeId: SCOPE })
      const caller = yield* session(broker.socketPath, "caller", { scopeId: SCOPE })
      yield* caller.conn.write(frameBytes({ type: "list", requestId: "l1" }))
      const sessions = yield* expectFrame(caller.conn, "sessions", frameOfType("sessions"))
      const ids = (Array.isArray(sessions.sessions) ? sessions.sessions : []).map((s: unknown) => fieldOf(s, "id"))
      assert.includeMembers(ids, [other.id, caller.id], `the list named only ${ids.length} session(s)`)
      assertNoOversizedFrame(caller.conn)
    }))

  it.live("a paged list (list-page-v1) names every normal session, whatever big records registered before them", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      for (const name of ["big-1", "big-2"]) {
        const big = yield* raw(broker.socketPath, name)
        yield* registerWith(big, bigFrame(registration(freshId(name), { scopeId: SCOPE, session: { cwd: mark(0) } }), "ascii", 600_000))
      }
      const other = yield* session(broker.socketPath, "other", { scopeId: SCOPE })
      const caller = yield* session(broker.socketPath, "caller", { scopeId: SCOPE, features: [LIST_PAGE_V1] })
      const ids: Array<unknown> = []
      let cursor: string | undefined
      for (let page = 0; page < 10; page++) {
        const requestId = `page-${page}`
        yield* caller.conn.write(frameBytes({ type: "list", requestId, ...(cursor === undefined ? {} : { cursor }) }))
        const frame = yield* expectFrame(caller.conn, "a page", frameOfType("sessions", (f) => f.requestId === requestId))
        for (const s of Array.isArray(frame.sessions) ? frame.sessions : []) ids.push(fieldOf(s, "id"))
        cursor = typeof frame.nextCursor === "string" ? frame.nextCursor : undefined
        if (cursor === undefined) break
      }
      assert.includeMembers(ids, [other.id, caller.id])
      assertNoOversizedFrame(caller.conn)
    }))
})

describe("finding 6: answers never echo oversized input past 1 MiB", () => {
  const cases = [
    { name: "health (before registering)", frame: { type: "health", requestId: mark(0) }, register: false },
    { name: "list", frame: { type: "list", requestId: mark(0) }, register: true },
    { name: "cancel_message", frame: { type: "cancel_message", messageId: mark(0) }, register: true }
  ] as const
  for (const { frame, name, register } of cases) {
    it.live(`a ${name} with a 400 KB invalid-UTF-8 id is answered within 1 MiB, or the connection closed`, () =>
      Effect.gen(function*() {
        const broker = yield* withBroker()
        const conn = register ? (yield* session(broker.socketPath, "echo")).conn : yield* raw(broker.socketPath, "echo")
        yield* conn.write(bigFrame(frame, "invalid-utf8", 400_000))
        yield* answeredOrClosed(conn)
        assertNoOversizedFrame(conn)
      }))
  }
})

describe("finding 7: client text cannot forge lines in the broker's log", () => {
  const FORGED = "1999-01-01T00:00:00.000Z INFO session joined: forged"

  it.live("a frame type, a session name or a session id with a newline makes no line of its own", () =>
    Effect.gen(function*() {
      const { broker, log } = yield* withLoggedBroker()
      const badType = yield* raw(broker.socketPath, "bad type")
      yield* badType.write(frameBytes({ type: `x\n${FORGED} by a frame type` }))
      yield* badType.closed
      const badName = yield* raw(broker.socketPath, "bad name")
      yield* registerWith(badName, frameBytes(registration(freshId("n"), { name: `x\r\n${FORGED} by a name` })))
      const badId = yield* raw(broker.socketPath, "bad id")
      yield* registerWith(badId, frameBytes(registration(`x\n${FORGED} by an id`)))
      // The log is written in order by one fiber: once a later event is in, every earlier one is.
      const sentinel = yield* session(broker.socketPath, "sentinel")
      yield* awaitLogLine(log, new RegExp(sentinel.id))
      const forged = log().filter((line) => line.startsWith(FORGED))
      assert.deepStrictEqual(forged, [], `forged log lines:\n${forged.join("\n")}`)
    }))
})

describe("finding 8: a connection that never completes a frame is closed within a bound", () => {
  const bound = PROMISES.partialFrameBoundMs + 1_000

  it.live(`registered connections that drip a frame or stall inside one are closed within ${bound} ms`, () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const dripping = yield* session(broker.socketPath, "dripping")
      const stalled = yield* session(broker.socketPath, "stalled")
      const header = Buffer.alloc(4)
      header.writeUInt32BE(1_000, 0)
      yield* stalled.conn.write(Buffer.concat([header, Buffer.from("{\"type\":\"hea")]))
      yield* dripping.conn.write(header)
      const drip = Effect.gen(function*() {
        while (!dripping.conn.isClosed()) {
          yield* dripping.conn.write(Buffer.from(" "))
          yield* Effect.raceFirst(dripping.conn.closed, Effect.sleep("200 millis")) // the drip's pace, not a barrier
        }
      })
      yield* Effect.forkScoped(drip)
      const closed = yield* Effect.all([dripping.conn.closed, stalled.conn.closed], { concurrency: 2 }).pipe(
        Effect.timeoutOption(bound)
      )
      assert.isTrue(
        closed._tag === "Some",
        `after ${bound} ms: dripping ${dripping.conn.isClosed() ? "closed" : "still open"}, stalled ${stalled.conn.isClosed() ? "closed" : "still open"}`
      )
    }), 30_000)

  it.live("an unregistered connection that drips a register frame is closed by the registration timeout", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const conn = yield* raw(broker.socketPath, "unregistered drip")
      const bytes = frameBytes(registration(freshId("slow")))
      const drip = Effect.gen(function*() {
        for (let i = 0; i < bytes.length && !conn.isClosed(); i++) {
          yield* conn.write(bytes.subarray(i, i + 1))
          yield* Effect.raceFirst(conn.closed, Effect.sleep("200 millis")) // the drip's pace, not a barrier
        }
      })
      yield* Effect.forkScoped(drip)
      const closed = yield* conn.closed.pipe(Effect.timeoutOption(bound))
      assert.isTrue(closed._tag === "Some", `still open after ${bound} ms`)
      assert.strictEqual(conn.meter.count, 0, "the broker answered a frame that never completed")
    }), 30_000)
})
