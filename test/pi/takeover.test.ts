/**
 * One pi session open in two pi processes (`pi -c` or `pi --session X` in two
 * terminals): both register the same intercom id. The second takes it over,
 * and the first is told (`takeover-v1`): a notice and the footer say so, its
 * intercom tool calls fail saying so, and it does not reconnect — it used to,
 * a second later, taking the id back, and the two took it from each other
 * every second with the mail split between them and nobody told. A /reload
 * takes the id back (and tells the other one).
 */
import { SessionManager } from "@earendil-works/pi-coding-agent"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it, vi } from "vitest"
import { actResult, closeWorld, makeWorld, openPi, recordingUI } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

const reRegistrations = (): number => {
  const log = path.join(world.agentDir, "intercom", "broker.log")
  return (fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "").split("\n").filter((line) => line.includes("re-registered")).length
}

const takenOver = (text: string) => text.includes("taken over")

describe("one pi session open in two pi processes", () => {
  it("the second takes the id over, the first is told once and stays off until /reload", async () => {
    const dir = path.join(world.root, "sessions-twin")
    const aUI = recordingUI()
    const a = await openPi(world, { name: "twin", sessionManager: SessionManager.create(world.cwd, dir), ui: aUI })
    await actResult(a, { action: "status" }) // a prompt: pi writes the session file
    const file = a.session().sessionFile ?? ""
    assert.isTrue(fs.existsSync(file))
    const bUI = recordingUI()
    const b = await openPi(world, { sessionManager: SessionManager.open(file), ui: bUI })
    try {
      const id = a.session().sessionId
      assert.strictEqual(b.session().sessionId, id)
      assert.isFalse((await actResult(b, { action: "status" })).isError) // B registers: it takes the id over
      // A is told, once, and its footer says so (the status fiber looks each second).
      const notice = await aUI.nextNotice((n) => takenOver(n.message))
      assert.strictEqual(notice.type, "warning")
      assert.include(notice.message, `(pid ${process.pid})`)
      assert.include(notice.message, "/reload")
      assert.include(await aUI.nextStatus("intercom", takenOver), "/reload")
      // Its tool calls fail saying what happened; nothing reconnected meanwhile.
      const refused = await actResult(a, { action: "status" })
      assert.isTrue(refused.isError)
      assert.include(refused.text, "this session was taken over by another process")
      assert.include(refused.text, "Run /reload here to take it back.")
      assert.strictEqual(reRegistrations(), 1, "the first process took the id back")
      assert.isFalse((await actResult(b, { action: "status" })).isError)
      assert.strictEqual(aUI.notices.filter((n) => takenOver(n.message)).length, 1)

      // /reload in A: a new generation registers again and takes the id back; now B is told.
      await a.session().reload()
      await a.rebind()
      assert.isFalse((await actResult(a, { action: "status" })).isError)
      await bUI.nextNotice((n) => takenOver(n.message))
      assert.isTrue((await actResult(b, { action: "status" })).isError)
      assert.strictEqual(reRegistrations(), 2)
      assert.deepStrictEqual([...a.errors, ...b.errors], [])
    } finally {
      await a.quit()
      await b.quit()
    }
  }, 30_000)

  it("without a UI (print and json modes) the process taken over says so on stderr, once", async () => {
    const dir = path.join(world.root, "sessions-twin-print")
    let told: (line: string) => void = () => {}
    const notice = new Promise<string>((resolve) => { told = resolve })
    const lines: Array<string> = []
    const spy = vi.spyOn(console, "error").mockImplementation((...args: ReadonlyArray<unknown>) => {
      const line = args.map(String).join(" ")
      if (!takenOver(line)) return
      lines.push(line)
      told(line)
    })
    const a = await openPi(world, { name: "twin-print", sessionManager: SessionManager.create(world.cwd, dir), mode: "json" })
    let b: Awaited<ReturnType<typeof openPi>> | undefined
    try {
      await actResult(a, { action: "status" }) // a prompt: pi writes the session file
      const file = a.session().sessionFile ?? ""
      b = await openPi(world, { sessionManager: SessionManager.open(file), ui: recordingUI() })
      assert.isFalse((await actResult(b, { action: "status" })).isError) // B registers: it takes the id over
      const line = await notice // the test's own timeout fails a notice that never comes
      assert.include(line, `(pid ${process.pid})`)
      assert.include(line, "/reload")
      // Once: a tool call that fails on the takeover prints nothing more.
      assert.isTrue((await actResult(a, { action: "status" })).isError)
      assert.strictEqual(lines.length, 1, lines.join("\n"))
    } finally {
      spy.mockRestore()
      await a.quit()
      await b?.quit()
    }
  }, 30_000)
})
