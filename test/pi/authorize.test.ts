/**
 * The extension's provider of `AUTHORIZE_CHILD_EVENT` (src/pi/extension.ts)
 * against a launcher whose `respond` throws. The extension is loaded from
 * source by pi's own resource loader with a bus the test shares; no session
 * starts, so the answer is the "not connected" error. An unhandled rejection
 * would end a pi process (Node's default mode; pi's CLI adds no handler), so
 * the throw must be caught and reported.
 */
import { createEventBus, DefaultResourceLoader, SettingsManager } from "@earendil-works/pi-coding-agent"
import { afterAll, assert, describe, it, vi } from "vitest"
import { AUTHORIZE_CHILD_EVENT, type AuthorizeChildResult } from "../../src/pi/authorize.ts"
import intercomExtension from "../../src/pi/extension.ts"
import { closeWorld, makeWorld } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

describe("pi extension: a launcher's respond that throws", () => {
  it("is answered once, and its throw is reported on stderr instead of left as an unhandled rejection", async () => {
    const bus = createEventBus()
    const loader = new DefaultResourceLoader({
      cwd: world.cwd,
      agentDir: world.agentDir,
      settingsManager: SettingsManager.inMemory(),
      eventBus: bus,
      extensionFactories: [intercomExtension],
      noSkills: true,
      noPromptTemplates: true,
      noThemes: true,
      noContextFiles: true
    })
    await loader.reload()
    assert.deepStrictEqual(loader.getExtensions().errors, [])

    // Whichever comes first: the extension's report, or the rejection nobody handled.
    let onUnhandled: (reason: unknown) => void = () => undefined
    const outcome = new Promise<string>((resolve) => {
      onUnhandled = (reason) => resolve(`unhandled: ${String(reason)}`)
      vi.spyOn(console, "error").mockImplementation((...args: Array<unknown>) => resolve(`reported: ${args.join(" ")}`))
    })
    process.on("unhandledRejection", onUnhandled)
    const answers: Array<AuthorizeChildResult> = []
    try {
      bus.emit(AUTHORIZE_CHILD_EVENT, {
        launch: { runId: "r", agent: "a", index: 0 },
        respond: (result: AuthorizeChildResult) => {
          answers.push(result)
          throw new Error("launcher bug")
        }
      })
      const seen = await outcome
      assert.match(seen, /^reported: .*intercom:authorize-child.*Error: launcher bug/)
      assert.deepStrictEqual(answers, [{ ok: false, error: "Intercom not connected: no pi session has started" }])
    } finally {
      process.off("unhandledRejection", onUnhandled)
      vi.restoreAllMocks()
    }
  })
})
