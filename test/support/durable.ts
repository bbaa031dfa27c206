/**
 * A durable broker over the in-memory network whose memory store plays the
 * disk: `crash` marks the disk down first, so nothing the dying broker had
 * not committed reaches it, as with kill -9.
 */
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/index.ts"
import { makeMemory, type MemoryMailState } from "../../src/store/MailStore.ts"
import type { MemoryNetwork, RunningBroker } from "./memory.ts"

/** A broker over `disk`; `crash` loses whatever it had not committed. */
export const durableBroker = (world: MemoryNetwork, disk: MemoryMailState, options: BrokerCoreOptions = {}) =>
  Effect.gen(function*() {
    disk.down = false
    const running: RunningBroker = yield* world.startBroker({ ...options, store: makeMemory(disk) })
    return {
      ...running,
      crash: Effect.suspend(() => {
        disk.down = true
        return running.crash
      })
    }
  })
