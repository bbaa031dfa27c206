/**
 * A recipient taken over while the only hold left on a sender's withheld
 * return is its own parked flush's is owed the sender's `session_left` and
 * join at once (WithheldDepartures.takenOver). When none of the sender's old
 * mail reaches the new connection's outbox — its last old message, an ask,
 * is over by the takeover and is dropped on the way (MailDelivery.requeue) —
 * the pair's place is "first": it must still come after the connection's
 * `registered` (Rejoins.plan), or the client fails the registration
 * (review revr3, D1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const kind = (frame: string): string => {
  const parsed: { type: string; message?: { content: { text: string } }; sessionId?: string; session?: { id: string } } =
    JSON.parse(frame)
  if (parsed.type === "message") return `${parsed.message?.content.text}`
  if (parsed.type === "session_left") return `left ${parsed.sessionId}`
  if (parsed.type === "session_joined") return `joined ${parsed.session?.id}`
  return parsed.type
}

describe("a withheld return's pair owed at a takeover with none of the old mail handed over", () => {
  it.effect("the new connection hears `registered`, then the sender's leave and join", () =>
    Effect.gen(function*() {
      let clock = 1_000_000
      const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 }, () => clock)
      let connections = 0
      const session = (sessionId: string, connection: Connection = fakeConnection(++connections, false)): Peer => {
        const peer = attach(connection)
        batch(peer, [registerFrame({ sessionId })])
        return peer
      }
      const away = session("recipient")
      const a = session("sender")
      const y = session("other")
      batch(away, [{ type: "unregister" }])
      for (let i = 0; i < 4; i++) {
        router.output.writes.takeForWrite(a)
        batch(a, [{ type: "send", to: "recipient", message: message(`m${i}`) }])
      }
      // The recipient's connection writes at once until `stuck` is set.
      let stuck = false
      const recipient = session("recipient", { ...fakeConnection(++connections, false), write: () => (stuck ? Effect.never : undefined) })
      assert.strictEqual(recipient.parked.length, 3)
      // A's old ask waits behind the recipient's flush; A unregisters; the sender returns on C.
      router.output.writes.takeForWrite(a)
      assert.isTrue(batch(a, [{ type: "send", to: "recipient", message: message("old", { expectsReply: true }) }, { type: "unregister" }]))
      session("sender")
      // A's registration timeout forces the old ask into the recipient's own list: the flush's hold is the one left.
      close(a)
      // The recipient reads the flush (m1..m3 written), then stops reading with its outbox full of other mail.
      for (let i = 0; i < 3; i++) assert.isTrue(tryDrain(recipient))
      stuck = true
      for (let i = 0; i < 3; i++) {
        router.output.writes.takeForWrite(y)
        batch(y, [{ type: "send", to: "recipient", message: message(`y${i}`) }])
      }
      assert.isFalse(tryDrain(recipient)) // the old ask waits for room
      assert.strictEqual(recipient.withheldDepartures?.get("sender")?.holds, 1)
      // The ask's edge runs out (the default 10 minutes) before the takeover.
      clock += 11 * 60_000
      const log: Array<string> = []
      const next = attach({ ...fakeConnection(++connections, false), write: (frames) => void log.push(...frames.map((f) => kind(frameText(f)))) })
      batch(next, [registerFrame({ sessionId: "recipient" })])
      router.membership.notify()
      const mine = log.filter((f) => f === "registered" || f.endsWith(" sender") || f === "old" || /^y\d$/.test(f))
      assert.deepStrictEqual(mine.slice(0, 3), ["registered", "left sender", "joined sender"], JSON.stringify(mine))
    }))
})
