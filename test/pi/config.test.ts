/**
 * config.json keys the extension honours, in real pi sessions:
 * `toolVisibility: "after-first-use"` (load_intercom, lazy connect, exposure
 * before an actionable message), `inboundTrigger`, `status`, `askTimeoutMs`
 * and `brokerCommand` / `brokerArgs`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import {
  act,
  call,
  closeWorld,
  intercomMessages,
  listedIds,
  makeWorld,
  nextEvent,
  openPi,
  say,
  writeConfig
} from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

/** A broker command that leaves a mark, then runs the broker script it is given. */
const wrapper = path.join(world.root, "broker-wrapper.sh")
const marker = path.join(world.root, "wrapper-ran")
fs.writeFileSync(wrapper, `#!/bin/sh\ntouch "${marker}"\nexec "${process.execPath}" "$@"\n`, { mode: 0o755 })


describe("pi extension: config.json", () => {
  it("toolVisibility after-first-use: only load_intercom at first, no connection until first use, load_intercom exposes the tool; brokerCommand starts the broker", async () => {
    writeConfig(world, { toolVisibility: "after-first-use", brokerCommand: wrapper, brokerArgs: [] })
    const a = await openPi(world, { name: "eager-later" })
    const b = await openPi(world, { name: "lazy" })
    try {
      assert.notInclude(b.session().getActiveToolNames(), "intercom")
      assert.include(b.session().getActiveToolNames(), "load_intercom")
      assert.match(await act(b, {}, "load_intercom"), /^The intercom tool is enabled\./)
      assert.include(b.session().getActiveToolNames(), "intercom")
      // Nothing connected yet: a's list (its first use, after loading) shows only itself.
      await act(a, {}, "load_intercom")
      await act(a, { action: "list" })
      assert.deepStrictEqual(listedIds(a.session()), [a.session().sessionId])
      assert.isTrue(fs.existsSync(marker), "the broker was started through brokerCommand")
      // b connects through /intercom (the overlay's listing), and gets mail.
      await b.session().prompt("/intercom")
      b.script(say("got it"))
      const woke = nextEvent(b, (event) => event.type === "agent_settled" && b.calls.length >= 3)
      assert.strictEqual(await act(a, { action: "send", to: "lazy", message: "ping" }), "Message sent to lazy")
      await woke
      assert.strictEqual(intercomMessages(b.session()).length, 1)
    } finally {
      await a.quit()
      await b.quit()
      writeConfig(world, {})
    }
  })

  it("an actionable message makes a hidden tool visible before the model sees it", async () => {
    writeConfig(world, { toolVisibility: "after-first-use" })
    const a = await openPi(world)
    const b = await openPi(world, { name: "hidden" })
    try {
      await b.session().prompt("/intercom") // on the bus, tool still hidden
      assert.notInclude(b.session().getActiveToolNames(), "intercom")
      b.script(say("seen"))
      const woke = nextEvent(b, (event) => event.type === "agent_settled" && b.calls.length >= 1)
      a.script(call("load_intercom", {}), call("intercom", { action: "send", to: "hidden", message: "hello" }), say("ok"))
      await a.session().prompt("send")
      await woke
      assert.include(b.session().getActiveToolNames(), "intercom")
      assert.strictEqual(intercomMessages(b.session()).length, 1)
    } finally {
      await a.quit()
      await b.quit()
      writeConfig(world, {})
    }
  })

  it("after-first-use: a session that used intercom is back on the bus at once after /reload, and gets the mail sent meanwhile", async () => {
    writeConfig(world, { toolVisibility: "after-first-use" })
    const a = await openPi(world, { name: "lazy-a" })
    const b = await openPi(world, { name: "lazy-b" })
    try {
      await act(a, {}, "load_intercom")
      await act(a, { action: "list" })
      await act(b, {}, "load_intercom")
      await act(b, { action: "list" })
      await a.session().reload()
      await a.rebind()
      // Sent while a's new generation may still be joining: queued for it if it is not back yet.
      a.script(say("got it"))
      const woke = nextEvent(a, (event) => event.type === "agent_settled")
      await act(b, { action: "send", to: "lazy-a", message: "are you still there?" })
      await woke
      assert.match(intercomMessages(a.session()).at(-1) ?? "", /are you still there\?$/)
    } finally {
      await a.quit()
      await b.quit()
      writeConfig(world, {})
    }
  })

  it("inboundTrigger never, status suffix and askTimeoutMs", async () => {
    writeConfig(world, { inboundTrigger: "never", status: "reviewing", askTimeoutMs: 1500 })
    const a = await openPi(world, { name: "asker" })
    const b = await openPi(world, { name: "quiet" })
    try {
      assert.match(await act(b, { action: "list" }), /\[self, [a-z:]+ · reviewing, state:/)
      // delivery "steer": quiet's idle health travels on quiet's socket and may reach the broker after A's ask reads it; this test is not about peer_busy (C-HLT-6).
      const asked = await act(a, { action: "ask", to: "quiet", message: "anyone?", delivery: "steer" })
      assert.strictEqual(asked, `No reply from "quiet" within 1.5 seconds`)
      // The ask reached b's history without starting a turn.
      assert.strictEqual(intercomMessages(b.session()).length, 1)
      assert.strictEqual(b.calls.length, 2)
    } finally {
      await a.quit()
      await b.quit()
      writeConfig(world, {})
    }
  })
  // Before the fix pi's agent_settled waited the lifecycle's whole 2 s for a fiber that was not running.
  // Counted in event-loop turns between agent_end and agent_settled, not in time: a wait on a timer is
  // thousands of turns, a settle with nothing to wait for a handful.
  for (const config of [{ enabled: false }, { toolVisibility: "after-first-use" }]) {
    it(`${JSON.stringify(config)}: a run settles without waiting for a lifecycle fiber that is not running`, async () => {
      writeConfig(world, config)
      const b = await openPi(world)
      try {
        b.script(say("hello"))
        let turns = -1
        const counted = new Promise<number>((resolve) => {
          const spin = (): void => {
            if (turns < 0) return
            if (++turns >= 1_000) return resolve(turns)
            setImmediate(spin)
          }
          b.watch((event) => {
            if (event.type === "agent_end" && turns < 0) {
              turns = 0
              setImmediate(spin)
            } else if (event.type === "agent_settled") {
              resolve(turns)
              turns = -1
              return true
            }
            return false
          })
        })
        await b.session().prompt("hi")
        assert.isBelow(await counted, 100, "event-loop turns between agent_end and agent_settled")
      } finally {
        await b.quit()
        writeConfig(world, {})
      }
    })
  }
})
