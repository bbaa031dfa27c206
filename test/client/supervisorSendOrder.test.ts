/**
 * A child's `supervisorSend` keeps its place among its plain sends across a
 * reconnect (PendingSends.ts, `unsent` in Resending.ts): its supervisor
 * reads them in the order the child made them, whether they were made while
 * the child had no connection, or written on a connection that dropped
 * before any was answered (then the next connection writes them again, as
 * one batch, in that order).
 *
 * In memory under TestClock. The child's dialer can swallow what the child
 * writes (the broker never sees it: every send stays unanswered) and drop
 * its connection; the broker and the supervisor's connection stay, so the
 * child's grant holds when it registers again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { Message } from "../../src/protocol/frames.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { advance, memoryNetwork, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const message = (text: string): Message => ({ id: randomUUID(), timestamp: 0, content: { text } })

/**
 * A dialer into `world` whose connections can be made to swallow every
 * frame the client writes (`swallow`) and be dropped (`drop`: the newest).
 */
const swallowingDialer = (world: { readonly dial: Dialer }) => {
  const links: Array<Connection> = []
  const state = { swallowing: false }
  const dial: Dialer = (address) =>
    Effect.map(world.dial(address), (link) => {
      links.push(link)
      const wrapped: Connection = {
        ...link,
        write: (frames) => (state.swallowing ? undefined : link.write(frames)),
        writeAll: (frames) => Effect.suspend(() => wrapped.write(frames) ?? Effect.void)
      }
      return wrapped
    })
  return {
    dial,
    swallow: (on: boolean) => Effect.sync(() => (state.swallowing = on)),
    drop: Effect.suspend(() => links[links.length - 1]?.destroy ?? Effect.void)
  }
}

/** A supervisor, and its child in the same group (so its plain sends reach the supervisor too), connected. */
const supervisorAndChild = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  yield* world.startBroker({ idleExit: null })
  const supervisor = (yield* makeMemoryClient(
    memoryClientOptions(world, "sup-1", "planner", { ownerToken: "a-long-random-secret" })
  )).client
  const grant = yield* supervisor.authorizeChild("worker")
  const link = swallowingDialer(world)
  const child = (yield* makeMemoryClient(
    memoryClientOptions({ address: world.address, dial: link.dial }, "child-1", "worker", {
      supervisorGrant: grant,
      reconnectBaseMs: 500,
      reconnectMaxMs: 500,
      connectTimeoutMs: 60_000
    })
  )).client
  yield* child.connect
  return { supervisor, child, link }
})

/** One plain send to the supervisor, or one `supervisorSend`. */
type Sent = { readonly via: "send" | "supervisorSend"; readonly message: Message }

/** Makes each send in turn (each a step: its frame is written, or it waits, before the next is made). */
const sendAll = (child: Effect.Success<typeof supervisorAndChild>["child"], sends: ReadonlyArray<Sent>) =>
  Effect.forEach(sends, (sent) =>
    step(
      sent.via === "send"
        ? child.send({ to: "sup-1", message: sent.message })
        : child.supervisorSend({ message: sent.message })
    ))

/** The ids of the first `count` messages the supervisor reads, in order. */
const readIds = (supervisor: Effect.Success<typeof supervisorAndChild>["supervisor"], count: number) =>
  supervisor.messages.pipe(
    Stream.take(count),
    Stream.map((inbound) => inbound.message.id),
    Stream.runCollect
  )

const plain = (text: string): Sent => ({ via: "send", message: message(text) })
const upward = (text: string): Sent => ({ via: "supervisorSend", message: message(text) })

describe("a child's supervisorSend and its plain sends across a reconnect", () => {
  it.effect("made while the child has no connection, they reach the supervisor in the order they were made", () =>
    Effect.gen(function*() {
      const { supervisor, child, link } = yield* supervisorAndChild
      yield* link.drop
      yield* advance("10 millis")
      assert.isFalse((yield* child.status).connected, "test setup: the child is still connected")

      const sends = [plain("plain 1"), plain("plain 2"), upward("to my supervisor"), plain("plain 3")]
      const fibers = yield* sendAll(child, sends)
      assert.isTrue(fibers.every((fiber) => fiber.pollUnsafe() === undefined), "test setup: a send was answered")
      yield* advance("1 second")
      assert.strictEqual((yield* child.status).connections, 2, "test setup: the child did not reconnect")
      for (const fiber of fibers) yield* Fiber.join(fiber)
      assert.deepStrictEqual(yield* readIds(supervisor, sends.length), sends.map((sent) => sent.message.id))
    }))

  /**
   * `sends` are written in order on a connection that swallows them, which
   * then drops with none answered; the child reconnects and sends them again:
   * the supervisor reads them in the order they were made.
   */
  const droppedUnanswered = (sends: ReadonlyArray<Sent>) =>
    Effect.gen(function*() {
      const { supervisor, child, link } = yield* supervisorAndChild
      yield* link.swallow(true)
      const fibers = yield* sendAll(child, sends)
      assert.isTrue(fibers.every((fiber) => fiber.pollUnsafe() === undefined), "test setup: a send was answered")
      yield* link.swallow(false)
      yield* link.drop
      yield* advance("1 second")
      assert.strictEqual((yield* child.status).connections, 2, "test setup: the child did not reconnect")
      for (const fiber of fibers) yield* Fiber.join(fiber)
      assert.deepStrictEqual(yield* readIds(supervisor, sends.length), sends.map((sent) => sent.message.id))
    })

  it.effect("written on a connection that dropped unanswered, a supervisorSend made before plain sends is not overtaken by them", () =>
    droppedUnanswered([upward("to my supervisor first"), plain("plain 1"), plain("plain 2")]))

  it.effect("written on a connection that dropped unanswered, a supervisorSend made after plain sends does not overtake them", () =>
    droppedUnanswered([plain("plain 1"), plain("plain 2"), upward("to my supervisor last")]))
})
