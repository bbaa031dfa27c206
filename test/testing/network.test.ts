/**
 * The in-memory network the simulation runs on: addresses, dialling,
 * listener lifetimes, socket-like close semantics, and the push entry an
 * adopted connection gets (ReadPump.ts), with a Unix socket's semantics.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Queue, Scope } from "effect"
import type { Connection, FrameReceiver } from "../../src/transport/Connection.ts"
import { makeInMemoryPair } from "../../src/transport/InMemory.ts"
import { type InMemoryNetwork, makeInMemoryNetwork } from "../../src/transport/InMemoryNetwork.ts"
import { step } from "../support/steps.ts"

describe("in-memory network", () => {
  it.effect("dialling an address nobody listens on is refused", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const error = yield* Effect.flip(network.dial("sim://nobody"))
      assert.strictEqual(error._tag, "ConnectionRefused")
      assert.strictEqual(error.message, "Connection refused: nothing listens on sim://nobody")
    }))

  it.effect("one listener per address, free again once its Scope closes", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const scope = yield* Scope.make()
      yield* network.listen("sim://a", () => Effect.void).pipe(Scope.provide(scope))
      const taken = yield* Effect.flip(network.listen("sim://a", () => Effect.void))
      assert.strictEqual(taken._tag, "AddressInUse")
      assert.isTrue(network.isListening("sim://a"))
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(network.isListening("sim://a"))
      yield* network.listen("sim://a", () => Effect.void)
    }))

  it.effect("frames flow both ways; closing the listener ends its connections", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const listener = yield* Scope.make()
      const received = yield* Queue.unbounded<string>()
      // An echo server: answers each frame with "echo:<frame>".
      yield* network.listen("sim://echo", (connection) =>
        Effect.forever(
          Effect.flatMap(connection.read, (frames) =>
            Effect.andThen(
              Queue.offerAll(received, frames),
              connection.writeAll(frames.map((frame) => `echo:${frame}`))
            ))
        ).pipe(Effect.ignore)).pipe(Scope.provide(listener))
      const client = yield* network.dial("sim://echo")
      yield* client.writeAll(["a", "b"])
      assert.deepStrictEqual(yield* client.read, ["echo:a", "echo:b"])
      assert.deepStrictEqual(yield* Queue.takeAll(received), ["a", "b"])
      yield* Scope.close(listener, Exit.void)
      // The server end was destroyed with its listener's fiber.
      yield* client.writeAll(["c"]).pipe(Effect.ignore)
      const error = yield* Effect.flip(client.read)
      assert.strictEqual(error._tag, "ConnectionClosed")
    }))

  // As with a socket: a process that writes and closes leaves what it wrote to the other side, which reads
  // it, then the end. The dialler's Scope used to destroy the listener's end too, dropping what it had not
  // read yet: a simulated client's last `received` and `unregister`, behind a stalled broker side.
  it.effect("closing the dialler's Scope leaves what it wrote readable by the listener's end, then the end", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const accepted = yield* Deferred.make<Connection>()
      const closed = yield* Deferred.make<void>()
      // The listener's handler reads only once the dialler has closed.
      yield* network.listen("sim://late", (connection) =>
        Effect.andThen(Deferred.succeed(accepted, connection), Deferred.await(closed)))
      const dialler = yield* Scope.make()
      const client = yield* network.dial("sim://late").pipe(Scope.provide(dialler))
      yield* client.writeAll(["confirmation", "goodbye"])
      const server = yield* Deferred.await(accepted)
      yield* Scope.close(dialler, Exit.void)
      assert.deepStrictEqual(yield* server.read, ["confirmation", "goodbye"])
      assert.strictEqual((yield* Effect.flip(server.read))._tag, "ConnectionClosed")
      yield* Deferred.succeed(closed, undefined)
    }))

  it.effect("connection ids are unique per network: client end odd, server end the next", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const servers = yield* Queue.unbounded<number>()
      yield* network.listen("sim://ids", (connection) => Queue.offer(servers, connection.id))
      const first = yield* network.dial("sim://ids")
      const second = yield* network.dial("sim://ids")
      assert.deepStrictEqual([first.id, second.id], [1, 3])
      assert.deepStrictEqual([yield* Queue.take(servers), yield* Queue.take(servers)], [2, 4])
    }))

  it.effect("the link hook sees (and may replace) both ends of every connection", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const network = yield* makeInMemoryNetwork({
        link: ({ address, client, id, server }) => {
          seen.push(`${address} #${id}`)
          return { client: { ...client, id: 100 + id }, server }
        }
      })
      yield* network.listen("sim://hook", () => Effect.void)
      const connection = yield* network.dial("sim://hook")
      assert.deepStrictEqual(seen, ["sim://hook #1"])
      assert.strictEqual(connection.id, 101)
    }))
})

describe("in-memory pair: close semantics of a local socket", () => {
  it.effect("a destroyed end's written frames still reach the peer, then the peer sees the end", () =>
    Effect.gen(function*() {
      const [a, b] = yield* makeInMemoryPair()
      yield* a.writeAll(["1", "2"])
      yield* a.destroy
      assert.deepStrictEqual(yield* b.read, ["1", "2"])
      assert.strictEqual((yield* Effect.flip(b.read))._tag, "ConnectionClosed")
    }))

  it.effect("a destroyed end drops what it had not read, and a peer write waiting for room fails", () =>
    Effect.gen(function*() {
      const [a, b] = yield* makeInMemoryPair({ capacity: 1 })
      yield* b.writeAll(["unread"])
      const blocked = yield* Effect.forkChild(b.writeAll(["waiting"]))
      yield* Effect.yieldNow
      assert.isUndefined(blocked.pollUnsafe())
      yield* a.destroy
      const exit = yield* Fiber.await(blocked)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual((yield* Effect.flip(a.read))._tag, "ConnectionClosed")
    }))

  it.effect("end is graceful: the peer reads everything, then a clean close", () =>
    Effect.gen(function*() {
      const [a, b] = yield* makeInMemoryPair()
      const done = yield* Deferred.make<void>()
      yield* a.writeAll(["x"])
      yield* a.end
      yield* Deferred.succeed(done, undefined)
      assert.deepStrictEqual(yield* b.read, ["x"])
      const error = yield* Effect.flip(b.read)
      assert.deepStrictEqual([error._tag, error._tag === "ConnectionClosed" && error.clean], ["ConnectionClosed", true])
    }))
})

/** A receiver that records its events in order: each frame, and the end (`end:clean` / `end:unclean`). */
const recorder = () => {
  const events: Array<string> = []
  const receiver: FrameReceiver = {
    frames: (frames) => {
      events.push(...frames)
    },
    ended: (error) => {
      events.push(error._tag === "ConnectionClosed" ? `end:${error.clean ? "clean" : "unclean"}` : `end:${error._tag}`)
    }
  }
  return { events, receiver }
}

/** Listens on `address` with an Adopter (in the current Scope) and dials it: the client end and the adopted server end. */
const adoptOne = (network: InMemoryNetwork, address: string) =>
  Effect.gen(function*() {
    const adopted: Array<Connection> = []
    yield* network.listen(address, { adopt: (connection) => adopted.push(connection) })
    const client = yield* network.dial(address)
    yield* step(Effect.void) // the listener's loop hands it over
    assert.strictEqual(adopted.length, 1)
    return { client, server: adopted[0]! }
  })

describe("in-memory network: adopted connections push, as a Unix socket does (ReadPump)", () => {
  it.effect("an Adopter gets each connection with a push entry: batches come as events, with no read", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const { client, server } = yield* adoptOne(network, "sim://push")
      assert.isDefined(server.receive)
      yield* client.writeAll(["early"])
      const { events, receiver } = recorder()
      server.receive?.(receiver)
      yield* step(Effect.void)
      // What came before `receive` is handed over once it is called.
      assert.deepStrictEqual(events, ["early"])
      yield* step(client.writeAll(["a", "b"]))
      assert.deepStrictEqual(events, ["early", "a", "b"])
      // The server end still writes as any connection does.
      yield* server.writeAll(["reply"])
      assert.deepStrictEqual(yield* client.read, ["reply"])
    }))

  it.effect("pauseReading stops reading (the writer backs up); resumeReading hands over what was taken, then reads on", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork({ capacity: 1 })
      const { client, server } = yield* adoptOne(network, "sim://pause")
      const { events, receiver } = recorder()
      server.receive?.(receiver)
      yield* step(client.writeAll(["1"]))
      assert.deepStrictEqual(events, ["1"])
      server.pauseReading?.()
      // The pump already waited for this batch: it is taken, and held (as a chunk already read is).
      yield* step(client.writeAll(["2"]))
      // This one stays in the link, and the next write finds it full.
      yield* step(client.writeAll(["3"]))
      const blocked = yield* step(client.writeAll(["4"]))
      assert.deepStrictEqual(events, ["1"])
      assert.isUndefined(blocked.pollUnsafe())
      // The held batch comes inside resumeReading; the rest once reading has gone on.
      server.resumeReading?.()
      assert.deepStrictEqual(events, ["1", "2"])
      yield* step(Effect.void)
      assert.deepStrictEqual(events, ["1", "2", "3", "4"])
      assert.isTrue(blocked.pollUnsafe() !== undefined && Exit.isSuccess(blocked.pollUnsafe()!))
    }))

  it.effect("the peer's end comes as an event after the last batch; a paused receiver hears of it when it resumes", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const { client, server } = yield* adoptOne(network, "sim://end")
      const { events, receiver } = recorder()
      server.receive?.(receiver)
      yield* step(Effect.void)
      server.pauseReading?.()
      yield* step(Effect.andThen(client.writeAll(["last"]), client.end))
      assert.deepStrictEqual(events, [])
      server.resumeReading?.()
      yield* step(Effect.void)
      assert.deepStrictEqual(events, ["last", "end:clean"])
      // Once: destroying it afterwards tells the receiver nothing more.
      yield* server.destroy
      assert.deepStrictEqual(events, ["last", "end:clean"])
    }))

  it.effect("destroying it stops its reading and tells the receiver once; the peer sees the end", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const { client, server } = yield* adoptOne(network, "sim://destroy")
      const { events, receiver } = recorder()
      server.receive?.(receiver)
      yield* step(client.writeAll(["x"]))
      yield* server.destroy
      yield* step(Effect.void)
      assert.deepStrictEqual(events, ["x", "end:unclean"])
      assert.strictEqual((yield* Effect.flip(client.read))._tag, "ConnectionClosed")
    }))

  it.effect("closing the listener destroys what its adopter still holds", () =>
    Effect.gen(function*() {
      const network = yield* makeInMemoryNetwork()
      const listener = yield* Scope.make()
      const { client, server } = yield* adoptOne(network, "sim://close").pipe(Scope.provide(listener))
      const { events, receiver } = recorder()
      server.receive?.(receiver)
      yield* step(Effect.void)
      yield* Scope.close(listener, Exit.void)
      assert.deepStrictEqual(events, ["end:unclean"])
      assert.strictEqual((yield* Effect.flip(client.read))._tag, "ConnectionClosed")
    }))
})
