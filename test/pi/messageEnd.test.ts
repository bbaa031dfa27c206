/**
 * The extension's `message_end` handler (src/pi/extension.ts) answers an
 * `intercom_message` synchronously, from the factory call's `QueuedInbound`:
 * it returns no Promise, so pi's agent loop never waits on a generation
 * (starting, or changing) for an intercom message to enter the model's
 * context (review revaz AZ3). The extension is loaded from source by pi's own
 * resource loader; no session starts.
 */
import { createEventBus, DefaultResourceLoader, SettingsManager } from "@earendil-works/pi-coding-agent"
import { afterAll, assert, describe, it } from "vitest"
import intercomExtension from "../../src/pi/extension.ts"
import { closeWorld, makeWorld } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

describe("pi extension: message_end", () => {
  it("returns synchronously, not a Promise, for an intercom message", async () => {
    const loader = new DefaultResourceLoader({
      cwd: world.cwd,
      agentDir: world.agentDir,
      settingsManager: SettingsManager.inMemory(),
      eventBus: createEventBus(),
      extensionFactories: [intercomExtension],
      noSkills: true,
      noPromptTemplates: true,
      noThemes: true,
      noContextFiles: true
    })
    await loader.reload()
    const { errors, extensions } = loader.getExtensions()
    assert.deepStrictEqual(errors, [])
    const handlers = extensions.flatMap((extension) => extension.handlers.get("message_end") ?? [])
    assert.lengthOf(handlers, 1)
    const message = {
      role: "custom",
      customType: "intercom_message",
      content: "a message",
      display: true,
      details: {
        messageId: "m-1",
        from: { id: "b0b0", name: "B", cwd: "/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
        expectsReply: false,
        intent: "steer"
      },
      timestamp: 0
    }
    for (const handler of handlers) {
      const result: unknown = handler({ type: "message_end", message }, {})
      assert.notInstanceOf(result, Promise)
      assert.isUndefined(result, "a message not handed over here is left as it is")
    }
  })
})
