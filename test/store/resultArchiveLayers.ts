/**
 * The layers the result archive's tests run against: each runs `body` with a
 * fresh, empty archive with `settings`.
 */
import { Effect } from "effect"
import { ResultArchive, type ResultArchiveService, type ResultArchiveSettings } from "../../src/store/ResultArchive.ts"

/** Runs `body` with a fresh archive of one layer. */
export type UseArchive = <A, E>(
  settings: Partial<ResultArchiveSettings> | undefined,
  body: (archive: ResultArchiveService) => Effect.Effect<A, E>
) => Effect.Effect<A, E>

/** Layer name → how to use a fresh archive of it. */
export const archiveLayers: ReadonlyArray<readonly [string, UseArchive]> = [
  ["memory", (settings, body) => Effect.suspend(() => body(ResultArchive.makeMemory(undefined, settings)))]
]
