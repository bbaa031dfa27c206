/**
 * A durable broker over the in-memory network whose memory store plays the
 * disk: `crash` marks the disk down first, so nothing the dying broker had
 * not committed reaches it, as with kill -9.
 */
import { Deferred, Effect, Ref } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/index.ts"
import { type MailCommit, type MailStoreService, makeMemory, type MemoryMailState } from "../../src/store/MailStore.ts"
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

/**
 * A memory store over `disk` whose commits wait for `gate` and are recorded
 * in `commits` (`begun` counts the commits that started waiting). A commit that runs after `disk.down` fails, as a dying
 * process's would: whether the disk is up is decided when it runs.
 */
export const gatedStore = (disk: MemoryMailState) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const commits = yield* Ref.make<Array<MailCommit>>([])
    const begun = yield* Ref.make(0)
    const memory = makeMemory(disk)
    const store: MailStoreService = {
      ...memory,
      commit: (batch) =>
        Ref.update(begun, (n) => n + 1).pipe(
          Effect.andThen(Deferred.await(gate)),
          Effect.andThen(Ref.update(commits, (all) => [...all, batch])),
          Effect.andThen(Effect.suspend(() => memory.commit(batch)))
        )
    }
    return { store, gate, commits, begun, open: Deferred.succeed(gate, undefined) }
  })
