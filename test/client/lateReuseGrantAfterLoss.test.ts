/**
 * The late-answer path of a send written again after a loss (ConnectionSends.ts `answered`, `answerAfterLoss`) reads
 * an `E_MESSAGE_ID_REUSE` by the grants of the connection that read it (task lossgrant, gap 1; review revdh DH3).
 *
 * The real broker core, durable, on the in-memory network under TestClock, and a real IntercomClient. alpha sends
 * m1 to bob (delivered, committed); then another message under m1's id, watched (`lateVerdict`, as an ask settling
 * with the broker watches it). Its write is swallowed by alpha's first connection (the broker never reads it), so
 * its caller times out and leaves it abandoned; the broker dies (crash: its connections drop) and a new one starts
 * on the same disk. alpha reconnects and writes the send again (`resend`, marked `afterLoss`); the new broker's
 * record under the id holds m1's content, so it refuses the re-send with P46's own text, which the connection reads
 * after nobody waits for it. Granted `reuse-reason-v1`, that text means other content under the id — the caller's
 * own reuse — so the late verdict is the `MessageIdReuse` as given. Not granted (the register asks for everything
 * but it: a broker that does not offer it), the broker gives that text for any mismatch, a re-send of a delivered
 * first write too, so the late verdict is the loss carrying it (outcome unknown). The clock moves by the client's
 * send timeout and its reconnect back-off (a modelled outage), never as a barrier: the verdict is read behind a
 * round trip on alpha's new connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { ConnectionLost, MessageIdReuse, RequestTimeout } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { REUSE_REASON_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, messageFor } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork, settle, step } from "../support/memory.ts"
import { withholding } from "../support/withheldFeatures.ts"
import { isSendWrite } from "./lostOnTheWay.ts"
import { makeMemoryClient, memoryClientOptions } from "./support.ts"

const SEND_TIMEOUT = 1_000
const BOB = "bbbbbbbb-6666-4000-8000-0000000000b1"

/**
 * Runs the set-up of the module header, the register asking for every extension but `withheld`; answers what the
 * late verdict of the re-sent send holds (its failure, squashed) and the features each connection was granted.
 */
const lateReuseAfterCrash = (sessionId: string, withheld: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const first = yield* durableBroker(world, disk, { idleExit: null })
    const bob = yield* world.session({ sessionId: BOB, name: "bob" })
    const granted: Array<ReadonlyArray<string>> = []
    const links: Array<Connection> = []
    const swallowing = { on: false }
    const dial: Dialer = (address) =>
      Effect.map(world.dial(address), (connection): Connection => {
        links.push(connection)
        const link = withholding(connection, withheld, granted)
        // While armed, a write holding a send is taken and never passed on: the broker never reads it.
        const write: Connection["write"] = (frames) =>
          swallowing.on && isSendWrite(frames) ? Effect.void : link.write(frames)
        return { ...link, write, writeAll: (frames) => write(frames) ?? Effect.void }
      })
    const { client: alpha } = yield* makeMemoryClient(
      memoryClientOptions({ address: world.address, dial }, sessionId, "alpha", {
        sendTimeoutMs: SEND_TIMEOUT,
        reconnectBaseMs: 100,
        reconnectMaxMs: 100
      })
    )
    yield* settle(alpha.connect)
    const delivered = message("the build is green")
    const ack = yield* settle(alpha.send({ to: "bob", message: delivered }))
    assert.strictEqual(ack.delivery, "socket_delivered", "setup: m1 was not delivered")
    assert.strictEqual((yield* messageFor(bob.client, delivered.id)).message.id, delivered.id, "setup: bob did not get m1")

    // Other content under m1's id, watched; its write is swallowed and its caller gives up (abandoned).
    const reused = { ...message("the build is red"), id: delivered.id }
    const verdict = yield* alpha.lateVerdict({ to: "bob", message: reused })
    swallowing.on = true
    const caller = yield* step(Effect.exit(alpha.send({ to: "bob", message: reused })))
    yield* advance(SEND_TIMEOUT + 1)
    const timedOut = caller.pollUnsafe()
    const callerExit = timedOut !== undefined && Exit.isSuccess(timedOut) ? timedOut.value : undefined
    assert.isTrue(
      callerExit !== undefined && Exit.isFailure(callerExit) && Cause.squash(callerExit.cause) instanceof RequestTimeout,
      "setup: the caller did not time out"
    )
    swallowing.on = false

    // The broker dies with the send unanswered; a new one starts on its disk, and bob registers with it.
    yield* first.crash
    yield* durableBroker(world, disk, { idleExit: null })
    yield* world.session({ sessionId: BOB, name: "bob" })
    yield* advance("150 millis")
    assert.strictEqual(links.length, 2, "setup: alpha did not reconnect")
    // A round trip on the new connection: the answer to the re-send, written before it, is read by then.
    assert.isTrue(yield* settle(alpha.settleRoundTrip), "setup: the round trip on the new connection was not answered")
    const read = yield* verdict
    const failure = read.answer !== undefined && Exit.isFailure(read.answer) ? Cause.squash(read.answer.cause) : read.answer
    return { failure, granted }
  })

describe("a late E_MESSAGE_ID_REUSE to a send re-sent after the broker died, read by the connection's grant (task lossgrant)", () => {
  it.effect("granted reuse-reason-v1: P46's text is the caller's own reuse, the late verdict the MessageIdReuse as given", () =>
    Effect.gen(function*() {
      const { failure, granted } = yield* lateReuseAfterCrash("aaaaaaaa-6666-4000-8000-0000000000a1", [])
      const grants = granted.map((features) => features.includes(REUSE_REASON_V1))
      assert.deepStrictEqual(grants, [true, true], "setup: not two registrations, each granted reuse-reason-v1")
      assert.instanceOf(failure, MessageIdReuse, `the late verdict was ${String(failure)}`)
      assert.deepInclude(failure, { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuse })
    }))

  it.effect("not granted reuse-reason-v1: P46's text may be a delivered first write's, the late verdict the loss carrying it", () =>
    Effect.gen(function*() {
      const { failure, granted } = yield* lateReuseAfterCrash("aaaaaaaa-6666-4000-8000-0000000000a2", [REUSE_REASON_V1])
      const grants = granted.map((features) => features.includes(REUSE_REASON_V1))
      assert.deepStrictEqual(grants, [false, false], "setup: not two registrations, neither granted reuse-reason-v1")
      assert.instanceOf(failure, ConnectionLost, `the late verdict was ${String(failure)}`)
      if (!(failure instanceof ConnectionLost)) return
      assert.deepInclude(failure.refusal, { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuse })
      assert.notStrictEqual(failure.firstWriteReceived, true, "marked as the first write's record")
      assert.notStrictEqual(failure.firstWriteDeliveredHere, true, "marked as delivered here")
    }))
})
