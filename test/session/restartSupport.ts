/**
 * Known issue 6's scenario, shared by the tests of what a restarted process
 * remembers (test/session/handledAfterRestart.test.ts, a workflow parent's
 * in test/workflow/parentJournal.test.ts): a message bob's earlier process
 * read and never confirmed, so the broker sends it again to bob's next
 * process; and a session generation of that process over a host.
 */
import { Effect, Layer } from "effect"
import { IntercomClient, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { Host, type HostService } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { messageFor, send } from "../support/broker.ts"
import { memoryNetwork } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "../client/support.ts"

/** alice's session id. */
export const A_ID = "aaaaaaaa-6666-4000-8000-00000000000a"
/** bob's session id, the same across his processes. */
export const B_ID = "bbbbbbbb-6666-4000-8000-00000000000b"

/** The de-duplication window these tests give the session (ms). */
export const WINDOW_MS = 60_000

/** A session generation of `client` over `host`, in the test's Scope; `capacity` bounds its de-duplication window. */
export const sessionGeneration = (client: IntercomClientService, host: HostService, capacity?: number) =>
  Layer.build(
    IntercomSession.layer({ inboundDedupe: { windowMs: WINDOW_MS, ...(capacity === undefined ? {} : { capacity }) } }).pipe(
      Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client), Host.layer(host)))
    )
  )

/**
 * A broker, alice, and `first` — a message bob's earlier process read and
 * never confirmed: that process (a wire client granted `received-v1`) is gone,
 * so the broker still keeps the message for bob. Returns bob's new client (not
 * yet connected) and alice.
 */
export const readButNeverConfirmed = (first: Message) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    yield* world.startBroker({ idleExit: null })
    const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
    const before = yield* world.session({ sessionId: B_ID, name: "bob", frame: { features: [RECEIVED_V1] } })
    assertDelivered(yield* send(alice.client, "bob", first))
    yield* messageFor(before.client, first.id)
    yield* before.client.destroy
    yield* settled([alice.client])
    const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
    return { alice, bob }
  })
