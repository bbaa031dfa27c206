/**
 * An in-memory "network": addresses that a broker listens on and clients dial,
 * each connection an `InMemory` pair. A listener runs a handler per
 * connection (`Accept`, a fiber each) or hands each to an `Adopter` with the
 * push entry a Unix socket has (ReadPump.ts), as `serveUnix` does. With it
 * the real broker (`BrokerCore`), client (`IntercomClient.make({ dial })`)
 * and session code run unchanged in one process, with no socket and no real
 * timer, so TestClock drives everything.
 *
 * State belongs to one network value (no module-level maps): two simulations in
 * one process do not see each other's addresses.
 */
import { Data, Effect, Exit, FiberSet, Queue, type Scope } from "effect"
import type { Adopter, Connection } from "./Connection.ts"
import { type InMemoryPairOptions, makeInMemoryEndpoints } from "./InMemory.ts"
import { withReadPump } from "./ReadPump.ts"

/** Nothing listens on the address (the in-memory ECONNREFUSED / ENOENT). */
export class ConnectionRefused extends Data.TaggedError("ConnectionRefused")<{ readonly address: string }> {
  override get message(): string {
    return `Connection refused: nothing listens on ${this.address}`
  }
}

/** Another listener holds the address (the in-memory EADDRINUSE). */
export class AddressInUse extends Data.TaggedError("AddressInUse")<{ readonly address: string }> {
  override get message(): string {
    return `Address in use: ${this.address}`
  }
}

/** The two endpoints of a new connection, before either side sees them. */
export interface InMemoryLink {
  readonly address: string
  /** Network-unique connection number (the client end's id; the server end's is `id + 1`). */
  readonly id: number
  readonly client: Connection
  readonly server: Connection
}

/** Options of `makeInMemoryNetwork`: queue sizes for every connection, and an optional rewiring hook. */
export interface InMemoryNetworkOptions extends Pick<InMemoryPairOptions, "capacity" | "maxFrameBytes"> {
  /**
   * Replaces a new connection's endpoints before they are used, e.g. with
   * wrappers that observe frames or inject faults (the simulation harness).
   */
  readonly link?: (link: InMemoryLink) => { readonly client: Connection; readonly server: Connection }
  /**
   * Called whenever the read pump of an adopted connection takes a batch
   * that it must hold because its receiver paused reading (ReadPump.ts):
   * how the simulation counts that branch.
   */
  readonly pumpHeld?: () => void
}

/** What a listener runs for each accepted connection, in that connection's own Scope (a broker's `accept`). */
export type Accept = (connection: Connection) => Effect.Effect<void, never, Scope.Scope>

/** A network made by `makeInMemoryNetwork`: listen on an address, dial it. */
export interface InMemoryNetwork {
  /**
   * Accepts connections on `address` until the current Scope closes. With an
   * `Accept`, each accepted connection runs it in its own Scope, in a fiber of
   * the listener (so it belongs to the listener, not to the dialer), and is
   * destroyed when `accept` ends; closing the listener's Scope interrupts and
   * destroys them all. With an `Adopter` (a broker: `BrokerService.adopt`),
   * each is handed over as `serveUnix` hands over a socket: with a push entry
   * (`Connection.receive`, ReadPump.ts) whose pump fiber belongs to the
   * listener, and no fiber or Scope of its own; closing the listener's Scope
   * destroys those its adopter has not destroyed yet.
   */
  readonly listen: (address: string, handle: Accept | Adopter) => Effect.Effect<void, AddressInUse, Scope.Scope>
  /**
   * Connects to `address`; the connection lives in the current Scope: closing
   * it destroys the dialled end, and the listener's end reads what it wrote
   * before, then the end (as with a socket).
   */
  readonly dial: (address: string) => Effect.Effect<Connection, ConnectionRefused, Scope.Scope>
  /** Whether something listens on `address` now. */
  readonly isListening: (address: string) => boolean
}

interface Listener {
  readonly incoming: Queue.Queue<Connection>
}

/**
 * A new, empty in-memory network. Use it to run the real broker and clients
 * in one process — in tests, or under TestClock — without a socket file:
 * listen with a broker's `accept`, and give each client a `dial` that maps
 * `ConnectionRefused` to `IntercomNotConnected`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Broker } from "effect-intercom/broker"
 * import { IntercomClient, IntercomNotConnected } from "effect-intercom/client"
 * import { makeInMemoryNetwork } from "effect-intercom/transport"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const network = yield* makeInMemoryNetwork()
 *   const broker = yield* Broker.make({ idleExit: null })
 *   yield* network.listen("mem://broker", broker.accept)
 *   const client = yield* IntercomClient.make({
 *     agentDir: "/unused",
 *     intercomDir: "/unused",
 *     socketPath: "mem://broker", // the address to dial
 *     sessionId: "planner",
 *     registration: { cwd: "/", model: "none", pid: 1, startedAt: 0, lastActivity: 0, name: "planner" },
 *     launch: false, // nothing to spawn
 *     dial: (address) =>
 *       network.dial(address).pipe(
 *         Effect.mapError((error) => new IntercomNotConnected({ reason: error.message }))
 *       )
 *   })
 *   const sessions = yield* client.list // [{ id: "planner", name: "planner", … }]
 * }))
 * ```
 */
export const makeInMemoryNetwork = (options: InMemoryNetworkOptions = {}): Effect.Effect<InMemoryNetwork> =>
  Effect.sync(() => {
    const listeners = new Map<string, Listener>()
    let nextId = 1

    const listen: InMemoryNetwork["listen"] = (address, handle) =>
      Effect.gen(function*() {
        if (listeners.has(address)) return yield* new AddressInUse({ address })
        const incoming = yield* Queue.unbounded<Connection>()
        const connections = yield* FiberSet.make()
        // Adopted connections not yet destroyed: closing the listener destroys them (after their pumps stop).
        const adopted = new Set<Connection>()
        yield* Effect.addFinalizer(() => Effect.forEach([...adopted], (connection) => connection.destroy, { discard: true }))
        const runPump = yield* FiberSet.makeRuntime<never, void, never>()
        const take = (connection: Connection): Effect.Effect<unknown> => {
          if (typeof handle === "function") {
            return FiberSet.run(
              connections,
              // As serveUnix: the accepted end is destroyed when its handler ends or the listener closes.
              Effect.scoped(Effect.andThen(Effect.addFinalizer(() => connection.destroy), handle(connection)))
            )
          }
          return Effect.sync(() => {
            const pumped = withReadPump(connection, (pump) => runPump(pump), () => adopted.delete(pumped), options.pumpHeld)
            adopted.add(pumped)
            handle.adopt(pumped)
          })
        }
        const listener: Listener = { incoming }
        listeners.set(address, listener)
        // Runs first at close: stop accepting, and destroy what was dialled but never accepted.
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            if (listeners.get(address) === listener) listeners.delete(address)
            const pending: Array<Connection> = []
            for (let next = Queue.takeUnsafe(incoming); next !== undefined && Exit.isSuccess(next); next = Queue.takeUnsafe(incoming)) {
              pending.push(next.value)
            }
            Queue.shutdownUnsafe(incoming)
            return Effect.forEach(pending, (connection) => connection.destroy, { discard: true })
          })
        )
        yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(incoming), take), { disableYield: true }))
      })

    const dial: InMemoryNetwork["dial"] = (address) =>
      Effect.gen(function*() {
        const listener = listeners.get(address)
        if (listener === undefined) return yield* new ConnectionRefused({ address })
        const id = nextId
        nextId += 2
        const [client, server] = yield* makeInMemoryEndpoints({
          ...(options.capacity === undefined ? {} : { capacity: options.capacity }),
          ...(options.maxFrameBytes === undefined ? {} : { maxFrameBytes: options.maxFrameBytes }),
          ids: [id, id + 1]
        })
        // The dialler's Scope closes its own end only, as a process closes its socket: what it wrote stays
        // readable by the accepted end, then the end. The accepted end is the listener's (`listen`): its
        // handler, its adopter or the listener's close destroys it.
        yield* Effect.addFinalizer(() => client.destroy)
        const linked = options.link === undefined ? { client, server } : options.link({ address, id, client, server })
        if (!Queue.offerUnsafe(listener.incoming, linked.server)) {
          yield* linked.client.destroy
          return yield* new ConnectionRefused({ address })
        }
        return linked.client
      })

    return {
      listen,
      dial,
      isListening: (address) => listeners.has(address)
    } satisfies InMemoryNetwork
  })
