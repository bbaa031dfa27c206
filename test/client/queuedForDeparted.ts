/**
 * The world of the tests of a send by name lost on the way while the broker queued it for a departed session whose
 * name another session holds by the re-send (idReuseReasonsAfterLoss.test.ts, deliveredHereAfterLoss.test.ts): the
 * real broker core, durable, on the in-memory network under TestClock, its commit held (gatedStore) so the answer
 * to alpha's send waits while alpha's connection is destroyed; bob's first session (cwd /a) left before the send;
 * bob's second session registers with the directory the test gives — /a takes the queued mail (P49), another does
 * not — and alpha's client reconnects (100 ms, a modelled outage, not a barrier) and writes the send again. Found by
 * `duplicates`: the second of these tests was written as a copy of the first. Owns nothing past the test's Scope.
 * The sender is alpha's client by default; `queuedForDepartedWith` puts another over it (an `IntercomSession`).
 */
import { assert } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, type Scope } from "effect"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message } from "../support/broker.ts"
import { gatedStore } from "../support/durable.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

/** The ids of one run: alpha's, bob's two sessions' and an observer's (each test its own). */
export interface QueuedForDepartedIds {
  readonly alpha: string
  readonly bobFirst: string
  readonly bobSecond: string
  readonly observer: string
}

/**
 * Runs the world of the module header, bob's second session registering in `secondCwd`. Answers what alpha's send
 * ended as once alpha reconnected (its failure, squashed; undefined when it succeeded or still waits, `ended`
 * telling which), the message and bob's second session.
 */
export const queuedForDeparted = (ids: QueuedForDepartedIds, secondCwd: string) =>
  queuedForDepartedWith(ids, secondCwd, (alpha) => Effect.succeed((sent: Message) => alpha.send({ to: "bob", message: sent })))

/**
 * `queuedForDeparted`, alpha's send made by what `senderOf` builds over alpha's client before it connects (an
 * `IntercomSession`, say: test/session/deliveredHereAfterLoss.test.ts), given the message to send. Answers also the
 * send's exit (`exit`, undefined while it waits).
 */
export const queuedForDepartedWith = <A, E>(
  ids: QueuedForDepartedIds,
  secondCwd: string,
  senderOf: (alpha: IntercomClientService) => Effect.Effect<(sent: Message) => Effect.Effect<A, E>, never, Scope.Scope>
) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const { gate, store } = yield* gatedStore(makeMemoryMailState())
    yield* world.startBroker({ idleExit: null, store })
    const observer = yield* world.session({ sessionId: ids.observer, name: "observer" })
    const bobFirst = yield* world.session({ sessionId: ids.bobFirst, name: "bob", cwd: "/a" })
    const links: Array<Connection> = []
    const { client: alpha } = yield* makeMemoryClient(
      memoryClientOptions({
        address: world.address,
        dial: (address) => Effect.tap(world.dial(address), (link) => Effect.sync(() => links.push(link)))
      }, ids.alpha, "alpha", { reconnectBaseMs: 100, reconnectMaxMs: 100 })
    )
    const send = yield* senderOf(alpha)
    yield* settle(alpha.connect)
    yield* bobFirst.client.destroy
    yield* observer.client.next("session_left", (frame) => frame.sessionId === ids.bobFirst)

    const sent = message("queued for the departed bob")
    const sending = yield* step(Effect.exit(send(sent)))
    assert.isUndefined(sending.pollUnsafe(), "test setup: the send was answered before its commit")
    yield* step(links[0]!.destroy)
    yield* step(Deferred.succeed(gate, undefined))
    const bobSecond = yield* world.session({ sessionId: ids.bobSecond, name: "bob", cwd: secondCwd })

    yield* advance("150 millis")
    assert.strictEqual(links.length, 2, "test setup: alpha did not reconnect")
    const outcome = sending.pollUnsafe()
    const exit = outcome !== undefined && Exit.isSuccess(outcome) ? outcome.value : undefined
    const failure = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    return { exit, failure, ended: exit !== undefined, sent, bobSecond }
  })
