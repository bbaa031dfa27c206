/**
 * A parked item the drainer offered is never both written and still parked.
 * A takeover's `OutputEnd.handOver` takes the old connection's own parked list
 * back for the new connection (`handOverParked`); an item the drainer's offer
 * got accepted, and the old writer wrote at once, but still first in that
 * list, would be taken back and written to the new connection a second time.
 * `ParkedDrain.offerParked` takes the item off the list in the same synchronous
 * step that queues it, before telling the writer to flush. On a Router driven
 * by hand (no fibers): the recipient's writes complete at once, and each one
 * checks, as it happens, whether a message it carries is still parked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

describe("a drainer's accepted offer of its own parked mail", () => {
  it.effect("leaves the parked list before the writer writes it, so a hand-over cannot take it back again", () =>
    Effect.gen(function*() {
      const { attach: attachOnly, batch, router } = yield* handRouter({ outboxCapacity: 2 })
      const attach = (connection: Connection, sessionId: string): Peer => {
        const peer = attachOnly(connection)
        batch(peer, [registerFrame({ sessionId })])
        return peer
      }
      // The recipient is away; four messages wait for it in the mailbox.
      const away = attach(fakeConnection(1, false), "recipient")
      batch(away, [{ type: "unregister" }])
      const sender = attach(fakeConnection(2, false), "sender")
      for (let i = 0; i < 4; i++) batch(sender, [{ type: "send", to: "recipient", message: message(`m${i}`) }])
      // It comes back on a connection whose writes complete at once, each noting which of its messages are still parked.
      const written: Array<string> = []
      const writtenWhileParked: Array<string> = []
      let recipient: Peer | undefined
      const connection: Connection = {
        ...fakeConnection(3, false),
        write: (frames) => {
          for (const frame of frames) {
            const text = frameText(frame)
            const parsed: { type: string; message?: { content: { text: string } } } = JSON.parse(text)
            if (parsed.type !== "message") continue
            const name = `${parsed.message?.content.text}`
            written.push(name)
            const parked = recipient?.parked ?? []
            if (parked.some(([, item]) => typeof item === "object" && "frame" in item && frameText(item.frame) === text)) {
              writtenWhileParked.push(name)
            }
          }
          return undefined
        }
      }
      recipient = attach(connection, "recipient")
      assert.isAbove(recipient.parked.length, 0, "the mailbox flush did not park: the test sets up nothing")
      // The drainer's offers, one by one (each accepted: the writer empties the outbox as it writes).
      for (let next = router.output.drain.nextParked(recipient); next !== undefined; next = router.output.drain.nextParked(recipient)) {
        Effect.runSync(router.output.drain.offerParked(recipient, next))
      }
      assert.deepStrictEqual(written, ["m0", "m1", "m2", "m3"])
      assert.deepStrictEqual(writtenWhileParked, [], "a message was written while it was still parked")
    }))
})
