/**
 * Topics in real pi sessions (C-TOP-8, 9, 13, 15): a quiet update wakes
 * nobody, a blocker triggers a turn, and the subscriber's topic state is kept
 * as `intercom-topic` entries outside model context and restored on reload.
 */
import { afterAll, assert, describe, it } from "vitest"
import { actResult as act, closeWorld, entriesOf, intercomMessages, makeWorld, nextEvent, openPi, say } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

describe("pi extension: topics", () => {
  it("subscribe, a quiet update then a blocker (only the blocker reaches the model), entries saved and restored on reload", async () => {
    const a = await openPi(world, { name: "watcher" })
    const b = await openPi(world, { name: "builder" })
    try {
      assert.deepStrictEqual(await act(a, { action: "subscribe", topic: "repo/build" }), {
        text: "Subscribed to repo/build. Current state:\nNo current records.",
        isError: false
      })
      assert.deepStrictEqual(await act(b, { action: "publish", topic: "repo/build", message: "compiling" }), {
        text: "Current state saved for repo/build. 1/1 subscribed deliveries accepted. Accepted means written to the subscriber's connection, not that it was read.",
        isError: false
      })
      a.script(say("seen"))
      const woke = nextEvent(a, (event) => event.type === "agent_settled")
      await act(b, { action: "publish", topic: "repo/build", message: "build broken", event: "blocker" })
      await woke
      // The update before it was handled first, quietly: only the blocker is in the transcript.
      assert.deepStrictEqual(intercomMessages(a.session()), ["**Topic repo/build: blocker from builder** (revision 2)\n\nbuild broken"])
      const saved = entriesOf(a.session(), "intercom-topic").at(-1)
      assert.deepInclude(saved, { subscriptions: [{ topic: "repo/build", awaitRelease: false }] })
      assert.include(JSON.stringify(saved), "\"notifiedRevision\":2")
      assert.isFalse(a.session().messages.some((message) => JSON.stringify(message).includes("intercom-topic")))

      await a.session().reload()
      const shown = await act(a, { action: "topics" })
      assert.include(shown.text, "- repo/build — builder, revision 2, blocker: build broken")
      assert.include(shown.text, "Subscriptions: repo/build.")
    } finally {
      await a.quit()
      await b.quit()
    }
  })
})
