/**
 * Topics in real pi sessions (C-TOP-8, 9, 13, 15): a quiet update wakes
 * nobody, a blocker triggers a turn, and the subscriber's topic state is kept
 * as `intercom-topic` entries outside model context and restored on reload;
 * a burst of quiet updates costs a bounded number of those entries.
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

  it("a burst of quiet updates adds a bounded number of intercom-topic entries; a reload restores the latest", async () => {
    const a = await openPi(world, { name: "watcher" })
    const b = await openPi(world, { name: "builder" })
    try {
      await act(a, { action: "subscribe", topic: "repo/log" })
      const before = entriesOf(a.session(), "intercom-topic").length
      const updates = 10
      for (let i = 0; i < updates; i++) await act(b, { action: "publish", topic: "repo/log", message: `tick ${i}` })
      // A round trip on the subscriber's own connection after the publishes: every record has reached its board.
      await act(a, { action: "topics", topic: "repo/log" })
      // At most one save per QUIET_SAVE_DELAY (2 s) while the burst lasts, not one per update (the bound
      // leaves a loaded machine 6 s for the burst; the deterministic count is in test/session/topics.test.ts).
      assert.isAtMost(entriesOf(a.session(), "intercom-topic").length - before, 4)

      await a.session().reload()
      const entries = entriesOf(a.session(), "intercom-topic")
      // The reload's shutdown saved the state still waiting: at most one entry more, and it is the latest.
      assert.isAtMost(entries.length - before, 5)
      assert.include(JSON.stringify(entries.at(-1)), `tick ${updates - 1}`)
      assert.notInclude(JSON.stringify(entries.at(-1)), `tick ${updates - 2}`)
    } finally {
      await a.quit()
      await b.quit()
    }
  })
})
