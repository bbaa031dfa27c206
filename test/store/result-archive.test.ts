/**
 * `ResultArchive` (C-WKR-11…14, open question 15), the same behaviours over
 * each of its layers: receipts, the retention ceiling and what paging shows
 * of it, paging by UTF-16 units that never splits a surrogate pair, the
 * archive's count and age ceilings, who may read a report, and clear errors
 * for a bad address, offset or limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import * as TestClock from "effect/testing/TestClock"
import fc from "fast-check"
import {
  DEFAULT_RESULT_SETTINGS,
  type ReportInput,
  resultSettingsProblem,
  ResultArchive,
  type ResultArchiveService,
  type ResultArchiveSettings,
  ResultMemoryState,
  type ResultPage,
  type ResultViewer
} from "../../src/store/ResultArchive.ts"
import { archiveLayers } from "./resultArchiveLayers.ts"

const viewer: ResultViewer = { space: "scope:a", self: "scope:a\u0000boss" }
const report = (body: string, extra: Partial<ReportInput> = {}): ReportInput => ({
  from: { id: "worker-1", name: "worker" },
  space: "scope:a",
  group: "default",
  body,
  ...extra
})

/** Reads every page of `ref` from 0, following `nextOffset`. */
const readAll = (archive: ResultArchiveService, ref: string, limit: number) =>
  Effect.gen(function*() {
    const pages: Array<{ offset: number; text: string; nextOffset?: number; total: number; truncated: boolean }> = []
    let offset: number | undefined = 0
    while (offset !== undefined) {
      const page: ResultPage = yield* archive.read(viewer, ref, { offset, limit })
      pages.push({ offset: page.offset, text: page.text, total: page.result.total, truncated: page.result.truncated, ...(page.nextOffset === undefined ? {} : { nextOffset: page.nextOffset }) })
      if (pages.length > 100_000) throw new Error("paging does not end")
      offset = page.nextOffset
    }
    return pages
  })

/** Code units from the whole BMP (lone surrogates too), astral characters and ASCII. */
const anyText = fc.string({
  unit: fc.oneof(
    fc.constantFrom("a", "é", "😀", "𝄞", "\ud800", "\udc00", "\n"),
    fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
    fc.integer({ min: 0x10000, max: 0x10ffff }).map((point) => String.fromCodePoint(point))
  ),
  maxLength: 120
})

for (const [name, use] of archiveLayers) {
  const withArchive = <A, E>(
    body: (archive: ResultArchiveService) => Effect.Effect<A, E>,
    settings?: Partial<ResultArchiveSettings>
  ) => use(settings, body)

  describe(`ResultArchive (${name} layer)`, () => {
    it.effect("a receipt names a result:<UUID>, says durable or memory-only, and the body reads back whole (C-WKR-11, C-WKR-12)", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const receipt = yield* archive.store(report("the whole report", { title: "Fix the parser", run: "run-3", child: "worker" }))
          assert.match(receipt.ref, /^result:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
          assert.strictEqual(receipt.durable, name === "sqlite")
          assert.strictEqual(receipt.truncated, false)
          assert.strictEqual(receipt.total, 16)
          const page = yield* archive.read(viewer, receipt.ref)
          assert.strictEqual(page.text, "the whole report")
          assert.strictEqual(page.offset, 0)
          assert.isUndefined(page.nextOffset)
          assert.deepStrictEqual(page.result.from, { id: "worker-1", name: "worker" })
          assert.strictEqual(page.result.title, "Fix the parser")
          assert.strictEqual(page.result.run, "run-3")
          assert.strictEqual(page.result.child, "worker")
        })
      ))

    it.effect("pages are [offset, offset + limit) in UTF-16 units; total is the stored length; nextOffset only while text remains (C-WKR-13)", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const { ref } = yield* archive.store(report("abcdefghij"))
          const first = yield* archive.read(viewer, ref, { offset: 0, limit: 4 })
          assert.strictEqual(first.text, "abcd")
          assert.strictEqual(first.nextOffset, 4)
          assert.strictEqual(first.result.total, 10)
          const middle = yield* archive.read(viewer, ref, { offset: 4, limit: 4 })
          assert.strictEqual(middle.text, "efgh")
          assert.strictEqual(middle.nextOffset, 8)
          const last = yield* archive.read(viewer, ref, { offset: 8, limit: 4 })
          assert.strictEqual(last.text, "ij")
          assert.isUndefined(last.nextOffset)
          const end = yield* archive.read(viewer, ref, { offset: 10, limit: 4 })
          assert.strictEqual(end.text, "")
          assert.isUndefined(end.nextOffset)
        })
      ))

    it.effect("a page never ends between the halves of a surrogate pair: the end moves back one unit and nextOffset follows (open question 15)", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const { ref, total } = yield* archive.store(report("ab😀cd"))
          assert.strictEqual(total, 6)
          const first = yield* archive.read(viewer, ref, { offset: 0, limit: 3 })
          assert.strictEqual(first.text, "ab")
          assert.strictEqual(first.nextOffset, 2)
          const second = yield* archive.read(viewer, ref, { offset: 2, limit: 3 })
          assert.strictEqual(second.text, "😀c")
          assert.strictEqual(second.nextOffset, 5)
          const pair = yield* archive.read(viewer, ref, { offset: 2, limit: 2 })
          assert.strictEqual(pair.text, "😀")
          assert.strictEqual(pair.nextOffset, 4)
        })
      ))

    it.effect("the retention ceiling cuts the report: the receipt says so, reading to the end returns only the retained body and the flag stays set (C-WKR-12, C-WKR-14)", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const receipt = yield* archive.store(report("0123456789ABCDEF"))
          assert.strictEqual(receipt.truncated, true)
          assert.strictEqual(receipt.total, 10)
          assert.strictEqual(receipt.originalLength, 16)
          const pages = yield* readAll(archive, receipt.ref, 4)
          assert.strictEqual(pages.map((page) => page.text).join(""), "0123456789")
          assert.isTrue(pages.every((page) => page.truncated && page.total === 10))
          assert.isUndefined(pages.at(-1)!.nextOffset)
          const past = yield* Effect.flip(archive.read(viewer, receipt.ref, { offset: 11, limit: 4 }))
          assert.strictEqual(past._tag, "ResultRequestInvalid")
          assert.include(past.message, "offset 11 is past the end")
        }), { maxBodyChars: 10 }))

    it.effect("the retention cut never ends between a surrogate pair either", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const receipt = yield* archive.store(report("abc😀def"))
          assert.strictEqual(receipt.total, 3)
          assert.strictEqual(receipt.truncated, true)
          const page = yield* archive.read(viewer, receipt.ref)
          assert.strictEqual(page.text, "abc")
        }), { maxBodyChars: 4 }))

    it("property: concatenating every page yields the stored body exactly, for any text and any limit ≥ 2 (C-WKR-13)", async () => {
      await fc.assert(fc.asyncProperty(anyText, fc.integer({ min: 2, max: 40 }), (body, limit) =>
        Effect.runPromise(withArchive((archive) =>
          Effect.gen(function*() {
            const { ref, total } = yield* archive.store(report(body))
            assert.strictEqual(total, body.length)
            const pages = yield* readAll(archive, ref, limit)
            assert.strictEqual(pages.map((page) => page.text).join(""), body)
            for (const page of pages) {
              assert.isAtMost(page.text.length, limit)
              if (page.nextOffset !== undefined) {
                assert.strictEqual(page.nextOffset, page.offset + page.text.length)
                assert.isAbove(page.text.length, 0)
                const last = body.charCodeAt(page.nextOffset - 1)
                const next = body.charCodeAt(page.nextOffset)
                assert.isFalse(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff, "split a pair")
              }
            }
          })
        ))), { numRuns: name === "sqlite" ? 60 : 200 })
    })

    it.effect("a bad ref, offset or limit is a clear error naming what was wrong", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const { ref } = yield* archive.store(report("text"))
          const runHandle = yield* Effect.flip(archive.read(viewer, "run-3"))
          assert.include(runHandle.message, "\"run-3\" is not a stored result's address")
          const negative = yield* Effect.flip(archive.read(viewer, ref, { offset: -1 }))
          assert.include(negative.message, "offset must be a whole number from 0")
          const fraction = yield* Effect.flip(archive.read(viewer, ref, { offset: 1.5 }))
          assert.include(fraction.message, "got 1.5")
          const tiny = yield* Effect.flip(archive.read(viewer, ref, { limit: 1 }))
          assert.include(tiny.message, "limit must be a whole number from 2 to 100000, got 1")
          const listLimit = yield* Effect.flip(archive.list(viewer, { limit: 0 }))
          assert.include(listLimit.message, "limit must be a whole number from 1 to 50")
          const unknown = yield* Effect.flip(archive.read(viewer, "result:00000000-0000-4000-8000-000000000000"))
          assert.strictEqual(unknown._tag, "ResultNotFound")
        })
      ))

    it.effect("listing is newest first and paged; nextOffset only while more remain", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const refs: Array<string> = []
          for (let i = 0; i < 5; i++) refs.push((yield* archive.store(report(`report ${i}`, { title: `t${i}` }))).ref)
          const first = yield* archive.list(viewer, { offset: 0, limit: 2 })
          assert.deepStrictEqual(first.results.map((r) => r.ref), [refs[4], refs[3]])
          assert.strictEqual(first.total, 5)
          assert.strictEqual(first.nextOffset, 2)
          const last = yield* archive.list(viewer, { offset: 4, limit: 2 })
          assert.deepStrictEqual(last.results.map((r) => r.ref), [refs[0]])
          assert.isUndefined(last.nextOffset)
        })
      ))

    it.effect("a report is visible to its group and to the storing child's supervisor, not found for anyone else", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const { ref } = yield* archive.store(report("child work", { space: "scope:a\u0003group:kids", supervisor: "scope:a\u0000boss" }))
          const sameGroup = { space: "scope:a\u0003group:kids", self: "scope:a\u0000sibling" }
          const supervisor = { space: "scope:a", self: "scope:a\u0000boss" }
          const stranger = { space: "scope:a", self: "scope:a\u0000other" }
          assert.strictEqual((yield* archive.read(sameGroup, ref)).text, "child work")
          assert.strictEqual((yield* archive.read(supervisor, ref)).text, "child work")
          assert.strictEqual((yield* archive.list(supervisor)).total, 1)
          assert.strictEqual((yield* archive.list(stranger)).total, 0)
          const refused = yield* Effect.flip(archive.read(stranger, ref))
          assert.strictEqual(refused._tag, "ResultNotFound")
        })
      ))

    it.effect("past the count ceiling the oldest report goes first", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const refs: Array<string> = []
          for (let i = 0; i < 4; i++) refs.push((yield* archive.store(report(`r${i}`))).ref)
          const listed = yield* archive.list(viewer)
          assert.deepStrictEqual(listed.results.map((r) => r.ref), [refs[3], refs[2], refs[1]])
          assert.strictEqual((yield* Effect.flip(archive.read(viewer, refs[0]!)))._tag, "ResultNotFound")
        }), { maxReports: 3 }))

    it.effect("a report older than the age ceiling is no longer read or listed", () =>
      withArchive((archive) =>
        Effect.gen(function*() {
          const old = yield* archive.store(report("old"))
          yield* TestClock.adjust(60_000)
          const fresh = yield* archive.store(report("fresh"))
          assert.strictEqual((yield* archive.read(viewer, old.ref)).text, "old")
          yield* TestClock.adjust(60_001)
          assert.strictEqual((yield* Effect.flip(archive.read(viewer, old.ref)))._tag, "ResultNotFound")
          assert.deepStrictEqual((yield* archive.list(viewer)).results.map((r) => r.ref), [fresh.ref])
        }), { maxAgeMs: 120_000 }))
  })
}

describe("ResultArchive settings", () => {
  it("a ceiling that is not a whole number at least its minimum is named in the error", () => {
    assert.isUndefined(resultSettingsProblem(DEFAULT_RESULT_SETTINGS))
    assert.strictEqual(
      resultSettingsProblem({ ...DEFAULT_RESULT_SETTINGS, maxReports: 0 }),
      "the result count ceiling (maxReports) must be a whole number of at least 1, got 0"
    )
    assert.throws(() => ResultArchive.makeMemory(undefined, { maxBodyChars: 1.5 }), /maxBodyChars\) must be a whole number of at least 2, got 1.5/)
  })
})

describe("ResultArchive refs", () => {
  it.effect("refs come from the Random service: the same seed gives the same ref", () =>
    Effect.gen(function*() {
      const store = Effect.suspend(() => ResultArchive.makeMemory().store(report("x"))).pipe(Random.withSeed(42))
      const a = yield* store
      const b = yield* store
      assert.strictEqual(a.ref, b.ref)
    }))

  it.effect("a memory state outlives the archive made over it (a simulated broker crash)", () =>
    Effect.gen(function*() {
      const state = new ResultMemoryState()
      const { ref } = yield* ResultArchive.makeMemory(state).store(report("kept"))
      const page = yield* ResultArchive.makeMemory(state).read(viewer, ref)
      assert.strictEqual(page.text, "kept")
    }))
})
