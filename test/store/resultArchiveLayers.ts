/**
 * The layers the result archive's tests run against: each runs `body` with a
 * fresh, empty archive with `settings` — the memory layer, and the SQLite
 * layer over a private in-memory database with every migration applied.
 */
import { Effect, Layer } from "effect"
import * as Database from "../../src/store/Database.ts"
import { ResultArchive, type ResultArchiveService, type ResultArchiveSettings } from "../../src/store/ResultArchive.ts"

/** Runs `body` with a fresh archive of one layer. */
export type UseArchive = <A, E>(
  settings: Partial<ResultArchiveSettings> | undefined,
  body: (archive: ResultArchiveService) => Effect.Effect<A, E>
) => Effect.Effect<A, E>

/** Layer name → how to use a fresh archive of it. */
export const archiveLayers: ReadonlyArray<readonly [string, UseArchive]> = [
  ["memory", (settings, body) => Effect.suspend(() => body(ResultArchive.makeMemory(undefined, settings)))],
  ["sqlite", (settings, body) =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* Layer.build(Database.layerMemory).pipe(Effect.orDie)
      const archive = yield* ResultArchive.makeSql(settings).pipe(Effect.provideContext(database))
      return yield* body(archive)
    }))]
]
