/**
 * `ResultArchive`: the terminal reports of delegated work, kept as evidence
 * (C-WKR-11…14). It owns the reports: their `result:<UUID>` address, who
 * stored them and for whom, the body cut at a retention ceiling, and the
 * archive's own ceilings (how many reports, how old); the oldest go first.
 *
 * One service, two layers: `layerSql` keeps reports in the broker's database
 * through effect's `SqlClient` (migration `0003_results`; the broker is its
 * only user, and it runs in one fiber); `layerMemory` keeps them in a
 * `ResultMemoryState` that may be created outside the broker, so a simulated
 * broker crash keeps them as a disk would. The receipts of the first say
 * durable, those of the second memory-only (C-WKR-12).
 *
 * Who may read a report: sessions of the group (of the scope) it was stored
 * in, and the storing child's supervisor. The broker states both as opaque
 * keys (`space`, `supervisor`) and a reader as a `ResultViewer`; a report
 * another session may not read is simply not found.
 */
import { Clock, Context, Effect, Layer, Random } from "effect"
import { SqlClient } from "effect/sql"
import {
  checkListLimit,
  checkListOffset,
  checkPageLimit,
  checkPageOffset,
  checkResultRef,
  DEFAULT_LIST_LIMIT,
  DEFAULT_PAGE_LIMIT,
  RESULT_REF_PREFIX,
  type ResultSummary
} from "../protocol/results.ts"
import { makeMemoryBackend, ResultMemoryState } from "./ResultMemory.ts"
import {
  DEFAULT_RESULT_SETTINGS,
  type ResultArchiveService,
  type ResultArchiveSettings,
  type ResultBackend,
  ResultNotFound,
  ResultRequestInvalid
} from "./resultModel.ts"
import { cutPage, retain } from "./resultText.ts"
import { makeSqlBackend } from "./ResultSql.ts"

export { ResultMemoryState } from "./ResultMemory.ts"
export * from "./resultModel.ts"

const hex = (byte: number) => byte.toString(16).padStart(2, "0")

/** A fresh `result:<UUID>` (version 4) from the Random service, so a seeded test gets the same ones. */
export const newResultRef: Effect.Effect<string> = Effect.gen(function*() {
  const bytes: Array<number> = []
  for (let i = 0; i < 16; i++) bytes.push(yield* Random.nextIntBetween(0, 255))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const h = bytes.map(hex).join("")
  return `${RESULT_REF_PREFIX}${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
})

const invalid = (detail: string | undefined) =>
  detail === undefined ? Effect.void : Effect.fail(new ResultRequestInvalid({ detail }))

/** Why `settings` cannot be used, or undefined when they can. */
export const resultSettingsProblem = (settings: ResultArchiveSettings): string | undefined => {
  const whole = (what: string, value: number, min: number) =>
    Number.isSafeInteger(value) && value >= min ? undefined : `${what} must be a whole number of at least ${min}, got ${value}`
  return whole("the result body ceiling (maxBodyChars)", settings.maxBodyChars, 2) ??
    whole("the result count ceiling (maxReports)", settings.maxReports, 1) ??
    whole("the result age ceiling in milliseconds (maxAgeMs)", settings.maxAgeMs, 1)
}

/**
 * The archive over `backend`, with `settings` (defaults for what is not
 * given). Settings come from the broker's configuration, which checks them
 * with `resultSettingsProblem` first; unusable ones here are a defect
 * (a `RangeError` naming the setting).
 */
export const fromBackend = (
  backend: ResultBackend,
  settings: Partial<ResultArchiveSettings> = {}
): ResultArchiveService => {
  const resolved = { ...DEFAULT_RESULT_SETTINGS, ...settings }
  const problem = resultSettingsProblem(resolved)
  if (problem !== undefined) throw new RangeError(problem)
  const notBefore = Effect.map(Clock.currentTimeMillis, (now) => now - resolved.maxAgeMs)
  return {
    durable: backend.durable,
    store: (input) =>
      Effect.gen(function*() {
        const ref = yield* newResultRef
        const createdAt = yield* Clock.currentTimeMillis
        const kept = retain(input.body, resolved.maxBodyChars, input.originalLength)
        const summary: ResultSummary = {
          ref,
          from: input.from,
          group: input.group,
          ...(input.title === undefined ? {} : { title: input.title }),
          ...(input.run === undefined ? {} : { run: input.run }),
          ...(input.child === undefined ? {} : { child: input.child }),
          createdAt,
          total: kept.body.length,
          originalLength: kept.originalLength,
          truncated: kept.truncated
        }
        yield* backend.insert(
          { summary, space: input.space, supervisor: input.supervisor, body: kept.body },
          resolved.maxReports,
          createdAt - resolved.maxAgeMs
        )
        return { ref, durable: backend.durable, truncated: kept.truncated, total: summary.total, originalLength: kept.originalLength }
      }),
    list: (viewer, page = {}) =>
      Effect.gen(function*() {
        const offset = page.offset ?? 0
        const limit = page.limit ?? DEFAULT_LIST_LIMIT
        yield* invalid(checkListOffset(offset) ?? checkListLimit(limit))
        const found = yield* backend.list(viewer, yield* notBefore, offset, limit)
        const next = offset + found.results.length
        return { ...found, ...(next < found.total && found.results.length > 0 ? { nextOffset: next } : {}) }
      }),
    read: (viewer, ref, page = {}) =>
      Effect.gen(function*() {
        const offset = page.offset ?? 0
        const limit = page.limit ?? DEFAULT_PAGE_LIMIT
        yield* invalid(checkResultRef(ref) ?? checkPageOffset(offset) ?? checkPageLimit(limit))
        const found = yield* backend.window(viewer, ref, yield* notBefore, offset, limit + 1)
        if (found === undefined) return yield* new ResultNotFound({ ref })
        const total = found.summary.total
        if (offset > total) {
          return yield* new ResultRequestInvalid({
            detail: `offset ${offset} is past the end of ${ref} (total ${total} UTF-16 units); start from 0`
          })
        }
        const cut = cutPage(found.window, offset, limit, total)
        return {
          result: found.summary,
          offset,
          text: cut.text,
          ...(cut.nextOffset === undefined ? {} : { nextOffset: cut.nextOffset })
        }
      })
  }
}

/** The result archive service (see the module header). */
export class ResultArchive extends Context.Service<ResultArchive, ResultArchiveService>()(
  "effect-intercom/store/ResultArchive"
) {
  /** A memory-only archive over `state` (create it outside a simulated broker to outlive its crash). */
  static readonly makeMemory = (
    state: ResultMemoryState = new ResultMemoryState(),
    settings?: Partial<ResultArchiveSettings>
  ): ResultArchiveService => fromBackend(makeMemoryBackend(state), settings)
  /** A durable archive in the database of the `SqlClient` (migration `0003_results` applied). */
  static readonly makeSql = (
    settings?: Partial<ResultArchiveSettings>
  ): Effect.Effect<ResultArchiveService, never, SqlClient.SqlClient> =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return fromBackend(makeSqlBackend(sql), settings)
    })
  /** `makeMemory` as a Layer. */
  static readonly layerMemory = (
    state?: ResultMemoryState,
    settings?: Partial<ResultArchiveSettings>
  ): Layer.Layer<ResultArchive> => Layer.sync(ResultArchive, () => ResultArchive.makeMemory(state, settings))
  /** `makeSql` as a Layer. */
  static readonly layerSql = (
    settings?: Partial<ResultArchiveSettings>
  ): Layer.Layer<ResultArchive, never, SqlClient.SqlClient> => Layer.effect(ResultArchive, ResultArchive.makeSql(settings))
}
