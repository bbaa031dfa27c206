/**
 * The extension's UI surfaces in a real `pi --mode rpc` process, where pi
 * turns them into `extension_ui_request` records: `confirmSend` asks before a
 * plain send (declined: `Message cancelled by user`, nothing sent), the
 * footer status shows the connection, and `/intercom` outside the TUI
 * notifies the session listing.
 */
import { afterAll, assert, describe, it } from "vitest"
import { type Record_, resultText, runPi, toolEnd } from "./cli.ts"
import { closeWorld, EXTENSION, makeWorld } from "./support.ts"

const world = makeWorld({ confirmSend: true })
afterAll(() => closeWorld(world))

const uiRequest = (method: string, extra: (record: Record_) => boolean = () => true) => (record: Record_): boolean =>
  record.type === "extension_ui_request" && record["method"] === method && extra(record)

// Real pi processes with a scripted model: 10–20 s each on a loaded 2-core machine, so more room than the default 30 s.
describe("pi extension in pi --mode rpc", { timeout: 90_000 }, () => {
  it("confirmSend asks first and a declined send sends nothing; the footer shows the connection; /intercom notifies the listing", async () => {
    const pi = runPi(world, [
      { tool: "intercom", args: { action: "send", to: "nobody-here", message: "declined" } },
      { text: "ok" },
      { tool: "intercom", args: { action: "send", to: "nobody-here", message: "confirmed" } },
      { text: "ok" }
    ], ["--no-session", "--name", "rpc-one"], { extensions: [EXTENSION], mode: "rpc" })
    try {
      pi.send({ id: "1", type: "prompt", message: "send" })
      const ask = await pi.waitFor("the confirmation", uiRequest("confirm"))
      assert.match(String(ask["message"]), /^Send to "nobody-here":\n\ndeclined$/)
      pi.send({ type: "extension_ui_response", id: ask["id"], confirmed: false })
      const declined = await pi.waitFor("the declined send", toolEnd("intercom"))
      assert.strictEqual(resultText(declined), "Message cancelled by user")
      assert.strictEqual(declined["isError"], false)
      await pi.waitFor("the first run to settle", (record) => record.type === "agent_settled")

      pi.send({ id: "2", type: "prompt", message: "send again" })
      const again = await pi.waitFor("the second confirmation", uiRequest("confirm", (r) => r["id"] !== ask["id"]))
      pi.send({ type: "extension_ui_response", id: again["id"], confirmed: true })
      const sent = await pi.waitFor("the confirmed send", toolEnd("intercom", 2))
      assert.strictEqual(resultText(sent), `Message to "nobody-here" was not delivered: Session not found`)

      await pi.waitFor("the status line", uiRequest("setStatus", (r) => r["statusKey"] === "intercom" && /^intercom: connected/.test(String(r["statusText"]))))
      pi.send({ id: "3", type: "prompt", message: "/intercom all" })
      const listing = await pi.waitFor("the listing", uiRequest("notify", (r) => String(r["message"]).startsWith("**Current session:**")))
      assert.match(String(listing["message"]), /• rpc-one \(.+\) — .+ \[self, /)
    } finally {
      pi.child.stdin?.end()
    }
    assert.deepStrictEqual(await pi.closed, { code: 0, signal: null }, pi.stderr())
  })
})
