/**
 * Delivery modes in real pi sessions (`delivery-v1`): a passive message is
 * stored in the recipient's session and never wakes its model; a replace send
 * answers `Message queued for <to> (...)`; bad combinations are tool errors
 * and send nothing.
 */
import { afterAll, assert, describe, it } from "vitest"
import { actResult as act, closeWorld, intercomMessages, makeWorld, nextEvent, openPi } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

describe("pi extension: delivery modes", () => {
  it("passive is stored without a model turn; replace is staged; bad combinations send nothing", async () => {
    const a = await openPi(world, { name: "alpha" })
    const b = await openPi(world, { name: "bravo" })
    try {
      assert.match((await act(b, { action: "status" })).text, /^\*\*Intercom Status:\*\*\nConnected: Yes/)
      const callsBefore = b.calls.length

      const bad = [
        await act(a, { action: "ask", to: "bravo", message: "x", delivery: "passive" }),
        await act(a, { action: "send", to: "bravo", message: "x", delivery: "queue", queueMode: "replace" }),
        await act(a, { action: "send", to: "bravo", message: "x", threadId: "t" })
      ]
      assert.isTrue(bad.every((result) => result.isError), JSON.stringify(bad))
      assert.match(bad[0]?.text ?? "", /An ask is never passive/)
      assert.match(bad[1]?.text ?? "", /needs a threadId/)
      assert.match(bad[2]?.text ?? "", /threadId is only valid/)

      const stored = nextEvent(b, (event) => event.type === "message_end" && event.message.role === "custom")
      assert.deepStrictEqual(await act(a, { action: "send", to: "bravo", message: "fyi, no need to act", delivery: "passive" }), {
        text: "Message sent to bravo",
        isError: false
      })
      await stored
      assert.deepStrictEqual(intercomMessages(b.session()).map((text) => text.endsWith("fyi, no need to act")), [true])

      // A prompt of bravo's own (two model calls: the tool call, then its answer): the passive message
      // started no turn before it.
      await act(b, { action: "status" })
      assert.strictEqual(b.calls.length, callsBefore + 2, "bravo's model was woken only by its own prompt")

      const staged = await act(a, {
        action: "send",
        to: "bravo",
        message: "build 50%",
        delivery: "queue",
        queueMode: "replace",
        threadId: "build"
      })
      assert.isFalse(staged.isError)
      assert.match(staged.text, /^Message queued for bravo \(replace mode, thread "build": .+\)$/)
    } finally {
      await a.quit()
      await b.quit()
    }
  })
})
