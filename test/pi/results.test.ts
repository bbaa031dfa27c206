/**
 * The result archive in a real pi session (C-WKR-11…13): a report stored by
 * a client of the same broker is listed by the `results` action and paged by
 * `result`, with texts that say durable (the broker's default) and what the page is; a run
 * handle is not an address.
 */
import { Context, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { registrationOf } from "../client/support.ts"
import { actResult as act, closeWorld, makeWorld, openPi } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

/** Stores `body` through a client of the world's broker (running: a pi session holds it). */
const storeReport = (body: string, title: string) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const intercomDir = path.join(world.agentDir, "intercom")
    const context = yield* Layer.build(IntercomClient.layer({
      agentDir: world.agentDir,
      intercomDir,
      socketPath: path.join(intercomDir, "broker.sock"),
      sessionId: randomUUID(),
      registration: registrationOf("worker"),
      launch: false
    }))
    return yield* Context.get(context, IntercomClient).storeResult({ body, title })
  })))

describe("pi extension: results", () => {
  it("results lists a stored report; result reads it page by page; a run handle is refused", async () => {
    const a = await openPi(world, { name: "lead" })
    try {
      await act(a, { action: "status" }) // registered, so the broker runs
      const receipt = await storeReport("abcdefgh", "Parser fix")
      const listed = await act(a, { action: "results" })
      assert.isFalse(listed.isError)
      assert.include(listed.text, "Result archive: durable (kept across broker restarts). 1 stored result visible")
      assert.include(listed.text, `- ${receipt.ref} "Parser fix" — from worker (`)
      const page = await act(a, { action: "result", ref: receipt.ref, limit: 5 })
      assert.isFalse(page.isError)
      assert.include(page.text, `${receipt.ref}: units 0–5 of 8; durable (kept across broker restarts); complete.`)
      assert.include(page.text, "\n\nabcde\n\nMore: result with offset 5.")
      const rest = await act(a, { action: "result", ref: receipt.ref, offset: 5 })
      assert.include(rest.text, "\n\nfgh\n\nEnd of the report.")
      const refused = await act(a, { action: "result", ref: "run-3" })
      assert.isTrue(refused.isError)
      assert.include(refused.text, "\"run-3\" is not a stored result's address")
    } finally {
      await a.quit()
    }
  })
})
