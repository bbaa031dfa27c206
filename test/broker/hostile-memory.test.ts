/**
 * Regression tests for finding 9 of issue "Hostile and oversized input
 * cannot hurt other sessions": what one session can make the broker hold.
 * The broker runs as a process (`intercom broker`, with the fuzzer's GC
 * hook), and its heap is measured after two forced GCs, before and after:
 * `PROMISES.heldBytes` bounds what it may hold for sessions that do not read
 * or are away, `PROMISES.retainedBytes` what hostile sessions may leave
 * behind (docs/security.md, "Limits").
 *
 * Each test asserts the promise; each failed before its fix.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type BrokerUnderTest, startBroker } from "../../src/fuzz/BrokerUnderTest.ts"
import { frameOfType } from "../../src/fuzz/RawConnection.ts"
import { PROMISES } from "../../src/fuzz/promises.ts"
import { freshId, withBroker } from "../support/broker.ts"
import { bigFrame, frameBytes, mark, raw, registerWith, registration, roundTrip, session } from "../support/hostile.ts"

const MiB = 1024 * 1024

/** The broker's heap after two forced GCs (it runs as a process with the hook). */
const heapOf = (broker: BrokerUnderTest) =>
  Effect.gen(function*() {
    const sample = yield* Effect.orDie(broker.memory)
    assert.isDefined(sample, "the broker under test reports no memory")
    assert.isTrue(sample?.collected, "the broker ran without --expose-gc")
    return sample?.heap ?? 0
  })

const processBroker = Effect.orDie(startBroker("process"))

/** A message of `size` ASCII characters, as a send frame to `to`. */
const bigSend = (to: string, id: string, size: number) =>
  bigFrame({ type: "send", to, message: { id, timestamp: 1, content: { text: mark(0) } } }, "ascii", size)

/**
 * Sends 1 MB messages to `to`, 16 at a time, until the broker stops
 * acknowledging them (it holds the sender back) or `count` were acknowledged;
 * how many were.
 */
const sendUntilHeldBack = (conn: Parameters<typeof roundTrip>[0], to: string, count: number) =>
  Effect.gen(function*() {
    let acked = 0
    while (acked < count) {
      const batch = Math.min(16, count - acked)
      const last = `held-${acked + batch - 1}`
      // Held back: the broker stops reading, so the write itself may never finish, or its acks never come.
      const written = yield* conn.write(Buffer.concat(Array.from({ length: batch }, (_, i) => bigSend(to, `held-${acked + i}`, 1_000_000)))).pipe(
        Effect.timeoutOption("3 seconds")
      )
      if (written._tag === "None") break
      const ack = yield* Effect.result(conn.next("ack", frameOfType("delivered", (f) => f.messageId === last), "3 seconds"))
      if (ack._tag === "Failure") break
      acked += batch
    }
    return acked
  })

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`

describe("finding 9: one session cannot make the broker hold unbounded memory", () => {
  it.live("a session that never reads: its outbox is bounded in bytes, not only in frames", () =>
    Effect.gen(function*() {
      const broker = yield* processBroker
      const sink = yield* session(broker.socketPath, "sink")
      const sender = yield* session(broker.socketPath, "sender")
      yield* sink.conn.pause
      const before = yield* heapOf(broker)
      const acked = yield* sendUntilHeldBack(sender.conn, sink.id, 200)
      const held = (yield* heapOf(broker)) - before
      assert.isAtMost(held, PROMISES.heldBytes, `after ${acked} acknowledged 1 MB messages to a session that never reads, the broker holds ${mib(held)} (bound ${mib(PROMISES.heldBytes)})`)
    }), 120_000)

  it.live("mail for a departed session: the mailbox is bounded in bytes, not only in messages", () =>
    Effect.gen(function*() {
      const broker = yield* processBroker
      const away = yield* session(broker.socketPath, "away")
      yield* away.conn.write(frameBytes({ type: "unregister" }))
      yield* roundTrip(away.conn)
      const sender = yield* session(broker.socketPath, "sender")
      const before = yield* heapOf(broker)
      const acked = yield* sendUntilHeldBack(sender.conn, away.id, 256)
      const held = (yield* heapOf(broker)) - before
      assert.isAtMost(held, PROMISES.heldBytes, `after ${acked} queued 1 MB messages, the broker holds ${mib(held)} (bound ${mib(PROMISES.heldBytes)})`)
    }), 120_000)

  it.live("departed sessions with huge records are not kept whole: what they leave behind is bounded", () =>
    Effect.gen(function*() {
      const broker = yield* processBroker
      const before = yield* heapOf(broker)
      for (let i = 0; i < 64; i++) {
        const conn = yield* raw(broker.socketPath, `departed ${i}`)
        // A 1 MB cwd: kept in the departed record's SessionInfo and its mailbox identity (if the broker takes it at all).
        const id = yield* registerWith(conn, bigFrame(registration(`departed-${i}`, { name: "n", session: { cwd: mark(0) } }), "ascii", 1_000_000 - i))
        if (id !== undefined) {
          yield* conn.write(frameBytes({ type: "unregister" }))
          yield* roundTrip(conn)
        }
        yield* conn.destroy
      }
      const retained = (yield* heapOf(broker)) - before
      assert.isAtMost(retained, PROMISES.retainedBytes, `64 departed sessions with 1 MB records left ${mib(retained)} behind (bound ${mib(PROMISES.retainedBytes)})`)
    }), 120_000)

  it.live("sessions that register and leave in fresh scopes leave a bounded amount behind", () =>
    Effect.gen(function*() {
      const broker = yield* processBroker
      const before = yield* heapOf(broker)
      const conn = yield* raw(broker.socketPath, "scope churn")
      const frames: Array<Buffer> = []
      for (let i = 0; i < 50_000; i++) {
        frames.push(frameBytes(registration(`churn-${i}`, { scopeId: `scope-${i}` })), frameBytes({ type: "unregister" }))
      }
      yield* conn.write(Buffer.concat(frames))
      yield* roundTrip(conn)
      const retained = (yield* heapOf(broker)) - before
      assert.isAtMost(retained, PROMISES.retainedBytes, `50,000 sessions that came and went in fresh scopes left ${mib(retained)} behind (bound ${mib(PROMISES.retainedBytes)})`)
    }), 120_000)

  it.live(`one session cannot keep more than ${PROMISES.openAsksPerSession} asks open`, () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const silent = yield* session(broker.socketPath, "silent")
      const asker = yield* session(broker.socketPath, "asker", { features: ["ask-timeout-v1"] })
      const asks = Array.from({ length: 5_000 }, (_, i) =>
        frameBytes({
          type: "send",
          to: silent.id,
          askTimeoutMs: 2_592_000_000,
          message: { id: freshId(`ask-${i}`), timestamp: 1, content: { text: "answer me" }, expectsReply: true }
        }))
      yield* asker.conn.write(Buffer.concat(asks))
      yield* roundTrip(asker.conn)
      const stats = yield* broker.handle.stats
      assert.isAtMost(stats.asks, PROMISES.openAsksPerSession, `${stats.asks} asks of one session are open`)
    }), 60_000)
})
