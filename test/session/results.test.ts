/**
 * The result archive's tool actions (`results`, `result`; C-WKR-11…16): the
 * texts say durable or memory-only and what truncation means; a page is
 * evidence, not an answer; a broker without the archive, a missing ref or
 * an archive that does not answer in time is an error result — never a page,
 * an answer or an approval.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host, headless } from "../../src/session/Host.ts"
import { IntercomSession, sessionRegistration } from "../../src/session/IntercomSession.ts"
import { EVIDENCE_NOTE, renderList, renderPage } from "../../src/session/Results.ts"
import { ResultArchive, type ResultArchiveService } from "../../src/store/ResultArchive.ts"
import { withBroker } from "../support/broker.ts"
import { unitSession } from "./support.ts"

const summary = {
  ref: "result:0b7c2a4e-6f1d-4c3b-9a8e-2d5f7e1c3b9a",
  from: { id: "kid-1", name: "kid" },
  group: "run-1",
  title: "Parser fix",
  createdAt: 0,
  total: 10,
  originalLength: 25,
  truncated: true
}

describe("result texts", () => {
  it("a page says where it is, durable or memory-only, that it is evidence, and that a cut report's rest cannot be read", () => {
    const text = renderPage({ durable: false, result: summary, offset: 4, text: "567890" })
    assert.strictEqual(
      text,
      `${summary.ref}: units 4–10 of 10; memory-only (lost when the broker stops); truncated by retention: 10 of 25 units ` +
        `kept; the rest cannot be read by paging. ${EVIDENCE_NOTE}\n\n567890\n\nEnd of the retained text (the rest was cut by retention).`
    )
    const middle = renderPage({ durable: true, result: { ...summary, truncated: false, originalLength: 10 }, offset: 0, text: "0123", nextOffset: 4 })
    assert.include(middle, "durable (kept across broker restarts); complete.")
    assert.include(middle, "More: result with offset 4.")
  })

  it("a listing says durable or memory-only, how many, newest first, and where more start", () => {
    const text = renderList({ durable: true, results: [summary], total: 3, nextOffset: 1 }, 0)
    assert.include(text, "Result archive: durable (kept across broker restarts). 3 stored results visible; 1–1, newest first:")
    assert.include(text, `- ${summary.ref} "Parser fix" — from kid (kid-1), group run-1, 1970-01-01T00:00:00.000Z, 10 units, truncated`)
    assert.include(text, "More: results with offset 1.")
    assert.strictEqual(renderList({ durable: false, results: [], total: 0 }, 0), "Result archive: memory-only (lost when the broker stops). 0 stored results visible.")
  })
})

describe("results and result actions", () => {
  it.effect("against a broker without the archive both are error results naming it (C-WKR-16: never a page)", () =>
    Effect.gen(function*() {
      const { session } = yield* unitSession()
      for (const params of [{ action: "results" }, { action: "result", ref: summary.ref }]) {
        const result = yield* session.intercom(params)
        assert.isTrue(result.isError)
        assert.strictEqual(result.details["error"], "ResultsUnavailable")
        assert.include(result.text, "The result archive is unavailable")
      }
    }))

  it.effect("result without a ref is an error result and asks for one", () =>
    Effect.gen(function*() {
      const { session } = yield* unitSession()
      const result = yield* session.intercom({ action: "result" })
      assert.isTrue(result.isError)
      assert.include(result.text, "result needs a ref, result:<UUID> from results")
    }))

  it.live("an archive that does not answer in time is an error result, not a page (C-WKR-15)", () =>
    Effect.gen(function*() {
      const inner = ResultArchive.makeMemory()
      const silent: ResultArchiveService = { ...inner, read: () => Effect.never }
      const broker = yield* withBroker({ idleExit: null }).pipe(Effect.provideService(ResultArchive, silent))
      const id = "aaaaaaaa-5555-4000-8000-000000000001"
      const identity = { name: "reader", cwd: "/tmp/project", model: "test-model" }
      const client = IntercomClient.layer({
        agentDir: broker.root,
        intercomDir: broker.intercomDir,
        socketPath: broker.socketPath,
        sessionId: id,
        registration: sessionRegistration({ sessionId: id, identity, pid: 4242, startedAt: 0 }),
        launch: false,
        listTimeoutMs: 300
      })
      const context = yield* Layer.build(
        IntercomSession.layer().pipe(Layer.provide(Layer.merge(client, Host.layer(headless(identity, () => Effect.void)))))
      )
      const session = Context.get(context, IntercomSession)
      const result = yield* session.intercom({ action: "result", ref: summary.ref })
      assert.isTrue(result.isError)
      assert.strictEqual(result.details["error"], "RequestTimeout")
      assert.include(result.text, "Result archive timeout")
      assert.isUndefined(result.details["page"])
    }))
})
