/**
 * Review revc (merge "stuck", S2): a connection whose sends to a session
 * that does not read are parked, and that in the same batch unregisters and
 * registers another session with mail in its mailbox, has that session's
 * `registered` answer and its mailbox flush parked behind the sends. The
 * mail goes ahead of the sends only as far as that answer
 * (ParkedDrain.offerOwnAhead stops at an answer of the connection's own that
 * is not an ack of its sends): the client reads `registered` for `other`
 * before any mail for it, once the session that did not read reads.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { frameText } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { recording, typedSessions } from "../support/frameTypes.ts"
import { handRouter } from "../support/handRouter.ts"

const sendsTo = (to: string, count: number, text: string) =>
  Array.from({ length: count }, (_, i) => ({ type: "send", to, message: message(`${text} ${i}`) }))

describe("own items ahead of parked sends stop at a registration's answer", () => {
  it.effect("a session registered in a batch behind parked sends is written its registered answer before its mailbox's mail", () =>
    Effect.gen(function*() {
      const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
      const session = typedSessions({ attach, batch })
      const away = session("other", [])
      const sender = session("sender", [])
      const stuck = session("stuck", [])
      close(away.peer)
      batch(sender.peer, sendsTo("other", 3, "mail"))
      const log: Array<string> = []
      const conn = attach(recording(50, log))
      assert.isTrue(batch(conn, [
        registerFrame({ sessionId: "first" }),
        ...sendsTo("stuck", 4, "m"),
        { type: "unregister" },
        registerFrame({ sessionId: "other" })
      ]))
      const types: Array<string> = []
      // Ten rounds while `stuck` does not read (the mail must not go ahead of `registered` then), ten while it does.
      for (let round = 0; round < 20; round++) {
        if (round >= 10) router.output.writes.takeForWrite(stuck.peer)
        router.membership.notify()
        for (const frame of router.output.writes.takeForWrite(conn).frames) {
          const parsed: { type: string } = JSON.parse(frameText(frame))
          types.push(parsed.type)
        }
        while (tryDrain(conn)) continue
      }
      // `log`: what the writer wrote before the test took writes by hand (the first `registered`, an ack).
      const all = [...log, ...types]
      const firstMessage = all.indexOf("message")
      assert.isAtLeast(firstMessage, 0, `no mail reached the connection: ${all.join(",")}`)
      const second = all.indexOf("registered", all.indexOf("registered") + 1)
      assert.isAtLeast(second, 0, `mail for \`other\` was written, its \`registered\` not: ${all.join(",")}`)
      assert.isBelow(second, firstMessage, `frames: ${all.join(",")}`)
    }))
})
